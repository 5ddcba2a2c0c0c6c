//! `atoll nemesis`: Jepsen's method on real Atoll processes. Three simulated hosts
//! ([`topology`]: network namespaces on a bridge the run creates and removes), each running a
//! pd, a kv and a sql node ([`cluster`]); clients run workloads against the sql nodes and
//! record every operation as ok, failed or unknown ([`client`]); a nemesis starts or heals a
//! fault every ~10 s, random stagger ([`faults`]: kill, pause, partition, clock, shuffle,
//! split; `all` mixes them). At the end every fault heals, the cluster gets a recovery
//! window, final reads run, and the checkers judge the history.
//!
//! Workloads ([`Workload`]): `bank` ([`bank`]), `append` ([`append`], checked by
//! [`cycles`]), `set` ([`set`]), `register` ([`register`]), `monotonic` ([`monotonic`]),
//! `table` ([`table`]) and `long-fork` ([`long_fork`]);
//! several run at once with the clients split among them. Transactions are pessimistic
//! (TiDB's default) with locking reads, pessimistic with plain reads at REPEATABLE READ or READ
//! COMMITTED, or optimistic ([`TxnMode`]). Each run is seeded (`--seed`,
//! printed); the history (`history.jsonl`), the fault schedule (`faults.jsonl`), a chart of
//! throughput and latency with the faults shaded ([`chart`]) and every process's data and
//! logs are kept in `--out`. The exit status is 0 only when every checker
//! passes; the last line reads `nemesis: <ops> ops, <unknown> unknown, <anomalies> anomalies`.
//! A process that exits by itself, or a fault that cannot start or heal, is an anomaly too;
//! after the latter no fault starts, and the run goes on to its checks.
//!
//! Cleanup: the namespaces and bridge go when the run ends, on Ctrl-C or SIGTERM too; the
//! processes die with the harness (PR_SET_PDEATHSIG); a run that was SIGKILLed leaves its
//! namespaces, which the next run removes.

mod append;
mod bank;
mod chart;
mod client;
mod cluster;
mod cycles;
mod faults;
mod long_fork;
mod monotonic;
mod register;
mod set;
mod table;
mod topology;

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use client::{Failure, Op, Outcome};
use faults::{Cluster, Fault};
use topology::Topology;

const HOSTS: usize = 3;
/// A fault starts or heals about this often (random stagger of half of it either way).
const FAULT_INTERVAL: Duration = Duration::from_secs(10);
/// How long the cluster has after the final heal before the final reads must succeed.
const RECOVERY_MAX: Duration = Duration::from_secs(60);

#[derive(Args)]
pub struct NemesisArgs {
    /// Workloads: bank, append, set, register, monotonic, table, long-fork, all (comma
    /// separated; the clients are split among them).
    #[arg(long, default_value = "bank")]
    workload: String,
    /// Transactions' mode and isolation: pessimistic (the append workload's reads take
    /// locks), repeatable-read or read-committed (pessimistic, plain reads), optimistic.
    #[arg(long, value_enum, default_value_t = TxnMode::Pessimistic)]
    txn_mode: TxnMode,
    /// Faults: none, kill, pause, partition, clock, shuffle, split, kv-restart, all (comma
    /// separated; all is every one but kv-restart).
    #[arg(long, default_value = "kill")]
    nemesis: String,
    /// Seconds of workload under faults.
    #[arg(long, default_value_t = 60)]
    time: u64,
    /// Seed of the clients' and the nemesis's choices (random when not given).
    #[arg(long)]
    seed: Option<u64>,
    /// Where the history, the fault schedule and the processes' data go.
    #[arg(long, default_value = "nemesis-out")]
    out: PathBuf,
    /// Concurrent clients (default: two per workload, at least four).
    #[arg(long)]
    clients: Option<usize>,
}

/// What the harness needs of a workload.
pub trait Workload: Send + Sync {
    fn name(&self) -> &'static str;
    /// The statements that create its tables and rows. They run until they succeed, so they
    /// must be idempotent.
    fn setup(&self) -> String;
    /// One random operation on the sql node.
    fn operation(&self, rng: &mut StdRng, sql_node: &str) -> Attempt;
    /// Reads everything, once every fault has healed.
    fn final_read(&self, sql_node: &str) -> Result<String, Failure>;
    /// The anomalies among this workload's operations and its final reads (by sql node).
    fn check(&self, history: &[&Op], final_reads: &[(String, String)]) -> Vec<String>;
    /// A `SPLIT TABLE` statement that cuts its table at random keys in use, if it has one.
    fn split(&self, rng: &mut StdRng) -> Option<String>;
}

/// An operation as a workload ran it.
pub struct Attempt {
    pub kind: &'static str,
    /// What it wrote, or what it read when it succeeded.
    pub value: String,
    pub result: Result<(), Failure>,
}

/// How the workloads' transactions run, and so which anomalies their checkers allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TxnMode {
    /// Pessimistic (TiDB's default), every read `FOR UPDATE`: each key read or written stays
    /// locked until the commit.
    Pessimistic,
    /// Pessimistic at REPEATABLE READ with plain reads, as InnoDB's: plain reads see the
    /// transaction's snapshot, writes read the latest committed version under their lock.
    RepeatableRead,
    /// Pessimistic at READ COMMITTED as TiDB defines it: each statement reads what committed
    /// before it, writes as in `RepeatableRead`.
    ReadCommitted,
    /// Optimistic: snapshot isolation, conflicts found at commit.
    Optimistic,
}

impl TxnMode {
    /// The statements that begin a transaction in this mode.
    pub fn begin(self) -> &'static str {
        match self {
            TxnMode::Pessimistic | TxnMode::RepeatableRead => "BEGIN;",
            TxnMode::ReadCommitted => "SET transaction_isolation = 'READ-COMMITTED'; BEGIN;",
            TxnMode::Optimistic => "SET tidb_txn_mode = 'optimistic'; BEGIN;",
        }
    }

    /// What a read in a transaction ends with.
    pub fn read_suffix(self) -> &'static str {
        match self {
            TxnMode::Pessimistic => " FOR UPDATE",
            _ => "",
        }
    }
}

fn workloads(spec: &str, mode: TxnMode) -> anyhow::Result<Vec<Arc<dyn Workload>>> {
    let mut out: Vec<Arc<dyn Workload>> = Vec::new();
    let mut names: Vec<&str> = spec.split(',').map(str::trim).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) || (names.contains(&"all") && names.len() > 1) {
        bail!("--workload {spec}: each workload once (they share tables)");
    }
    for name in spec.split(',').map(str::trim) {
        match name {
            "bank" => out.push(Arc::new(bank::Bank { mode })),
            "append" => out.push(Arc::new(append::Append::new(mode))),
            "set" => out.push(Arc::new(set::Set::new())),
            "register" => out.push(Arc::new(register::Register::new())),
            "monotonic" => out.push(Arc::new(monotonic::Monotonic { mode })),
            "table" => out.push(Arc::new(table::Table::new())),
            "long-fork" => out.push(Arc::new(long_fork::LongFork::new())),
            "all" => {
                out.push(Arc::new(bank::Bank { mode }));
                out.push(Arc::new(append::Append::new(mode)));
                out.push(Arc::new(set::Set::new()));
                out.push(Arc::new(register::Register::new()));
                out.push(Arc::new(monotonic::Monotonic { mode }));
                out.push(Arc::new(table::Table::new()));
                out.push(Arc::new(long_fork::LongFork::new()));
            }
            other => bail!(
                "unknown workload {other:?}: bank, append, set, register, monotonic, table, long-fork or all"
            ),
        }
    }
    Ok(out)
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// A fault in force: what it is, what starting it did, and since when.
struct Active {
    fault: Fault,
    what: String,
    since_ms: u64,
}

/// What the nemesis did over a run.
#[derive(Default)]
struct FaultLog {
    /// Each fault's time in force, for the chart and the per-nemesis stretches.
    intervals: Vec<chart::Interval>,
    /// Processes that exited by themselves, and faults that could not start or heal: each
    /// is an anomaly.
    findings: Vec<String>,
}

pub fn run(args: NemesisArgs) -> anyhow::Result<()> {
    let workloads = workloads(&args.workload, args.txn_mode)?;
    let clients = args.clients.unwrap_or((2 * workloads.len()).max(4));
    if clients < workloads.len() {
        bail!("--clients {clients}: at least one per workload");
    }
    let nemeses = faults::parse(&args.nemesis)?;
    let seed = args.seed.unwrap_or_else(|| rand::rng().random());
    println!(
        "nemesis: seed {seed}, pid {}, commit {}, workload {} ({:?}), nemesis {}, {} s",
        std::process::id(),
        node::BUILD.git_hash,
        args.workload,
        args.txn_mode,
        args.nemesis,
        args.time
    );
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    Topology::remove_stale();
    if args.out.exists() {
        std::fs::remove_dir_all(&args.out)
            .with_context(|| format!("cannot empty {}", args.out.display()))?;
    }
    std::fs::create_dir_all(&args.out)?;
    let exe = std::env::current_exe().context("cannot find the atoll binary")?;
    let topology = Topology::create(HOSTS)?;
    let mut cluster = Cluster {
        processes: cluster::plan(&topology, HOSTS, &args.out)?,
        topology: &topology,
        exe: &exe,
        pd: (0..HOSTS)
            .map(|h| format!("{}:2379", topology.ip(h)))
            .collect::<Vec<_>>()
            .join(","),
        sql: (0..HOSTS)
            .map(|h| format!("{}:4000", topology.ip(h)))
            .collect(),
        agent: security::http_agent(Duration::from_secs(5)),
    };
    for p in &mut cluster.processes {
        p.start(&topology, &exe)?;
    }
    let began = Instant::now();
    let ms = move || began.elapsed().as_millis() as u64;
    for w in &workloads {
        wait_until(
            &format!("the {} workload's tables are created", w.name()),
            Duration::from_secs(120),
            || client::mysql(&cluster.sql[0], &w.setup()).is_ok(),
        )?;
    }
    println!("nemesis: cluster up in {} ms", ms());

    let history: Arc<Mutex<Vec<Op>>> = Arc::default();
    let workload_end = Instant::now() + Duration::from_secs(args.time);
    let done = move || STOP.load(Ordering::Relaxed) || Instant::now() >= workload_end;
    let threads = spawn_clients(clients, &workloads, &cluster.sql, seed, &history, ms, done);
    let mut rng = StdRng::seed_from_u64(seed);
    let schedule = std::fs::File::create(args.out.join("faults.jsonl"))?;
    let log = inject_faults(
        &mut cluster,
        &nemeses,
        &workloads,
        &mut rng,
        schedule,
        ms,
        workload_end,
    )?;
    for t in threads {
        let _ = t.join();
    }
    // Every fault healed: how long until every workload's final read on every sql node
    // succeeds.
    let healed = Instant::now();
    let mut anomalies = log.findings;
    let final_reads = final_reads(&workloads, &cluster.sql, &mut anomalies);
    let recovery_ms = healed.elapsed().as_millis();

    let history = history.lock().expect("history lock");
    save(&args.out, &history, &log.intervals)?;
    for (w, reads) in workloads.iter().zip(&final_reads) {
        let ops: Vec<&Op> = history
            .iter()
            .filter(|op| op.workload == w.name())
            .collect();
        anomalies.extend(w.check(&ops, reads));
    }
    report(&history, &log.intervals, recovery_ms, &anomalies);
    drop(cluster);
    drop(topology);
    if STOP.load(Ordering::Relaxed) {
        bail!("stopped by a signal");
    }
    if !anomalies.is_empty() {
        bail!("{} anomalies (see above; seed {seed})", anomalies.len());
    }
    Ok(())
}

/// The client threads, each running its workload's operations on the sql nodes (through a
/// [`client::Balancer`]) until `done`, and the balancer's health checks.
fn spawn_clients(
    clients: usize,
    workloads: &[Arc<dyn Workload>],
    sql: &[String],
    seed: u64,
    history: &Arc<Mutex<Vec<Op>>>,
    ms: impl Fn() -> u64 + Copy + Send + 'static,
    done: impl Fn() -> bool + Copy + Send + Sync + 'static,
) -> Vec<std::thread::JoinHandle<()>> {
    let balancer = Arc::new(client::Balancer::new(sql));
    let mut threads = balancer.clone().watch(done);
    threads.extend((0..clients).map(|c| {
        let (history, balancer) = (history.clone(), balancer.clone());
        let workload = workloads[c % workloads.len()].clone();
        let mut rng = StdRng::seed_from_u64(seed.wrapping_add(c as u64 + 1));
        std::thread::spawn(move || {
            while !done() {
                let node = balancer.pick(&mut rng);
                let start_ms = ms();
                let attempt = workload.operation(&mut rng, &node);
                let (outcome, error) = match attempt.result {
                    Ok(()) => (Outcome::Ok, None),
                    Err((o, e)) => {
                        balancer.report(&node, &e);
                        (o, Some(e))
                    }
                };
                history.lock().expect("history lock").push(Op {
                    workload: workload.name(),
                    client: c,
                    kind: attempt.kind,
                    node,
                    start_ms,
                    end_ms: ms(),
                    outcome,
                    value: attempt.value,
                    error,
                });
            }
        })
    }));
    threads
}

/// Starts and heals a fault about every [`FAULT_INTERVAL`] until `end` (or a signal), then
/// heals the one in force; each start and heal goes to `schedule` (JSON lines). A fault that
/// would outlast `end` does not start. A fault that cannot start or heal is a finding, and
/// no fault starts after it: the cluster is then in a state the run did not plan.
fn inject_faults(
    cluster: &mut Cluster,
    nemeses: &[faults::Nemesis],
    workloads: &[Arc<dyn Workload>],
    rng: &mut StdRng,
    mut schedule: std::fs::File,
    ms: impl Fn() -> u64,
    end: Instant,
) -> anyhow::Result<FaultLog> {
    let mut log = FaultLog::default();
    let mut active: Option<Active> = None;
    let mut stopped = nemeses.is_empty();
    let mut next = Instant::now() + stagger(rng);
    while Instant::now() < end && !STOP.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
        if Instant::now() < next || stopped {
            continue;
        }
        next = Instant::now() + stagger(rng);
        if let Some(a) = active.take() {
            if ms() < a.since_ms + a.fault.lasts_at_least().as_millis() as u64 {
                active = Some(a);
            } else {
                stopped = !heal(a, cluster, &mut schedule, ms(), &mut log)?;
            }
            continue;
        }
        let nemesis = nemeses[rng.random_range(0..nemeses.len())];
        let fault = nemesis.pick(rng, &cluster.processes, HOSTS, workloads);
        if Instant::now() + fault.lasts_at_least() > end {
            continue;
        }
        let since_ms = ms();
        match cluster.start(&fault, rng) {
            Ok(what) => {
                record(
                    &mut schedule,
                    serde_json::json!({"at_ms": since_ms, "start": what}),
                )?;
                active = Some(Active {
                    fault,
                    what,
                    since_ms,
                });
            }
            Err(e) => {
                let error = format!("{e:#}");
                record(
                    &mut schedule,
                    serde_json::json!({"at_ms": since_ms, "start_failed": fault.nemesis(), "error": error}),
                )?;
                log.findings.push(format!(
                    "a {} fault could not start: {error}",
                    fault.nemesis()
                ));
                // Undo whatever part of it started.
                if let Err(e) = cluster.heal(&fault) {
                    log.findings.push(format!(
                        "the part of a {} fault that started could not be undone: {e:#}",
                        fault.nemesis()
                    ));
                }
                log.findings.extend(cluster.restart_the_dead());
                stopped = true;
            }
        }
    }
    if let Some(a) = active.take() {
        heal(a, cluster, &mut schedule, ms(), &mut log)?;
    }
    log.findings.extend(cluster.restart_the_dead());
    Ok(log)
}

/// Heals `a` and restarts whatever exited meanwhile, into `schedule` and `log`; false when
/// the heal failed.
fn heal(
    a: Active,
    cluster: &mut Cluster,
    schedule: &mut std::fs::File,
    now_ms: u64,
    log: &mut FaultLog,
) -> anyhow::Result<bool> {
    let healed = cluster.heal(&a.fault);
    let event = match &healed {
        Ok(what) => serde_json::json!({"at_ms": now_ms, "heal": what, "since_ms": a.since_ms}),
        Err(e) => {
            let error = format!("{e:#}");
            log.findings
                .push(format!("{:?} could not be healed: {error}", a.what));
            serde_json::json!({"at_ms": now_ms, "heal_failed": a.what, "error": error, "since_ms": a.since_ms})
        }
    };
    record(schedule, event)?;
    log.findings.extend(cluster.restart_the_dead());
    log.intervals.push(chart::Interval {
        nemesis: a.fault.nemesis(),
        from_ms: a.since_ms,
        to_ms: now_ms,
        what: a.what.chars().take(40).collect(),
    });
    Ok(healed.is_ok())
}

/// Each workload's final read on every sql node (by node), retried until it succeeds within
/// [`RECOVERY_MAX`]; a read that never does is a finding.
fn final_reads(
    workloads: &[Arc<dyn Workload>],
    sql: &[String],
    findings: &mut Vec<String>,
) -> Vec<Vec<(String, String)>> {
    let began = Instant::now();
    let mut out = vec![Vec::new(); workloads.len()];
    for (w, reads) in workloads.iter().zip(&mut out) {
        for node in sql {
            loop {
                match w.final_read(node) {
                    Ok(a) => break reads.push((node.clone(), a)),
                    Err(_) if began.elapsed() < RECOVERY_MAX && !STOP.load(Ordering::Relaxed) => {
                        std::thread::sleep(Duration::from_millis(200))
                    }
                    Err((_, e)) => break findings.push(format!(
                        "{}: final read on {node} did not succeed within {RECOVERY_MAX:?} of the heal: {e}",
                        w.name()
                    )),
                }
            }
        }
    }
    out
}

/// Writes `history.jsonl` and `chart.png` into `out`.
fn save(
    out: &std::path::Path,
    history: &[Op],
    intervals: &[chart::Interval],
) -> anyhow::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(out.join("history.jsonl"))?);
    for op in history {
        writeln!(file, "{}", serde_json::to_string(op)?)?;
    }
    if let Err(e) = chart::draw(history, intervals, &out.join("chart.png")) {
        println!("nemesis: no chart: {e:#}");
    }
    Ok(())
}

/// Prints the run's counts, its longest stretches without a successful operation (overall
/// and per nemesis), the first anomalies and the closing line.
fn report(history: &[Op], intervals: &[chart::Interval], recovery_ms: u128, anomalies: &[String]) {
    let count = |o: Outcome| history.iter().filter(|op| op.outcome == o).count();
    let mut ends: Vec<u64> = history
        .iter()
        .filter(|op| op.outcome == Outcome::Ok)
        .map(|op| op.end_ms)
        .collect();
    ends.sort_unstable();
    println!(
        "nemesis: ok {}, failed {}, unknown {}; longest stretch without a successful operation {} ms; final reads {} ms after the heal",
        count(Outcome::Ok),
        count(Outcome::Fail),
        count(Outcome::Unknown),
        longest_gap_ms(&ends, 0, u64::MAX),
        recovery_ms
    );
    let mut per_nemesis: Vec<(&str, u64)> = Vec::new();
    for (i, f) in intervals.iter().enumerate() {
        let until = intervals.get(i + 1).map_or(u64::MAX, |next| next.from_ms);
        let gap = longest_gap_ms(&ends, f.from_ms, until);
        match per_nemesis.iter_mut().find(|(n, _)| *n == f.nemesis) {
            Some((_, longest)) => *longest = (*longest).max(gap),
            None => per_nemesis.push((f.nemesis, gap)),
        }
    }
    if !per_nemesis.is_empty() {
        let list: Vec<String> = per_nemesis
            .iter()
            .map(|(n, ms)| format!("{n} {ms} ms"))
            .collect();
        println!(
            "nemesis: longest stretch without a successful operation from a fault's start to the next one's: {}",
            list.join(", ")
        );
    }
    for a in anomalies.iter().take(10) {
        println!("nemesis: anomaly: {a}");
    }
    println!(
        "nemesis: {} ops, {} unknown, {} anomalies",
        history.len(),
        count(Outcome::Unknown),
        anomalies.len()
    );
}

/// About [`FAULT_INTERVAL`], give or take half of it.
fn stagger(rng: &mut StdRng) -> Duration {
    let half = FAULT_INTERVAL / 2;
    half + Duration::from_millis(rng.random_range(0..FAULT_INTERVAL.as_millis() as u64))
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() > deadline || STOP.load(Ordering::Relaxed) {
            bail!("{what}: not within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

fn record(schedule: &mut std::fs::File, event: serde_json::Value) -> anyhow::Result<()> {
    println!("nemesis: {event}");
    writeln!(schedule, "{event}")?;
    Ok(())
}

/// The longest time without a successful operation within `[from_ms, to_ms)`, given the
/// successful operations' ends in order.
fn longest_gap_ms(ends: &[u64], from_ms: u64, to_ms: u64) -> u64 {
    ends.windows(2)
        .map(|w| w[1].min(to_ms).saturating_sub(w[0].max(from_ms)))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stretch_counts_only_within_its_window() {
        let ends = [0, 100, 1100, 1200, 5200];
        assert_eq!(longest_gap_ms(&ends, 0, u64::MAX), 4000);
        assert_eq!(longest_gap_ms(&ends, 0, 1150), 1000);
        assert_eq!(longest_gap_ms(&ends, 4000, 6000), 1200);
        assert_eq!(longest_gap_ms(&ends, 500, 700), 200);
    }
}
