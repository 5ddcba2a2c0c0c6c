//! `atoll bench pool`: small requests next to big ones, on four schedulers, in one run.
//!
//! Small tasks (20-50 µs of CPU each, 35 µs on average) arrive open-loop, as a Poisson
//! stream at `small_load` × the CPUs' capacity, each as its own group. `big_streams` closed
//! loops each issue big requests one after another: 500 batches of ~1 ms CPU, yielding
//! between batches, one group per request. Every scheduler runs the same futures with the
//! same number of threads; runs alternate between schedulers so machine noise spreads over
//! all of them, and each figure is the median over `--repeat` runs.
//!
//! Reported per scheduler and scenario: small-task latency from its arrival time (p50, p99,
//! p99.9), small tasks completed per second, the big requests' share of the CPU the two
//! classes used, big requests completed and their median duration, and the CPU cost of
//! spawning one no-op task. `--out DIR` writes `pool.csv` and `pool.png`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;

use super::executors::{self, Class, Scheduler};
use super::plot;

#[derive(Args)]
pub struct PoolBenchArgs {
    /// Directory for pool.csv and pool.png.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Measured seconds per run (after one second of warm-up).
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Runs per scheduler and scenario; figures are medians.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Threads of every scheduler [default: the CPUs this process may use].
    #[arg(long)]
    threads: Option<usize>,
    /// Scenarios as BIG_STREAMS:SMALL_LOAD, comma separated. A load of 1 or more saturates.
    #[arg(long, default_value = "0:0.3,4:0.3,4:1.5")]
    scenarios: String,
    /// Schedulers to compare, comma separated.
    #[arg(long, default_value = "atoll,tokio,fifo,fixed")]
    schedulers: String,
    /// Batches of ~1 ms per big request.
    #[arg(long, default_value_t = 500)]
    big_batches: u32,
}

const SMALL_COST_US: (u64, u64) = (20, 50);
const BIG_BATCH: Duration = Duration::from_millis(1);
const WARM_UP: Duration = Duration::from_secs(1);
const NOOP_TASKS: u64 = 200_000;
/// How long a run waits for its last tasks after the window closes.
const DRAIN_WAIT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    pub big_streams: usize,
    pub small_load: f64,
}

#[derive(Debug, Clone, Default)]
pub struct Row {
    pub scheduler: String,
    pub big_streams: usize,
    pub small_load: f64,
    pub small_p50_us: f64,
    pub small_p99_us: f64,
    pub small_p999_us: f64,
    pub small_done_per_s: f64,
    pub big_share: f64,
    pub big_done: f64,
    pub big_median_ms: f64,
    pub task_cost_ns: f64,
}

fn parse_scenarios(text: &str) -> anyhow::Result<Vec<Scenario>> {
    text.split(',')
        .map(|s| {
            let (big, load) = s
                .trim()
                .split_once(':')
                .with_context(|| format!("scenario {s:?} is not BIG_STREAMS:SMALL_LOAD"))?;
            let scenario = Scenario {
                big_streams: big
                    .parse()
                    .with_context(|| format!("bad stream count in {s:?}"))?,
                small_load: load.parse().with_context(|| format!("bad load in {s:?}"))?,
            };
            if !(scenario.small_load >= 0.0 && scenario.small_load <= 10.0) {
                bail!("small load in {s:?} must be in [0, 10]");
            }
            Ok(scenario)
        })
        .collect()
}

pub fn run(args: PoolBenchArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; benchmark figures come from `cargo build --release`"
        );
    }
    let scenarios = parse_scenarios(&args.scenarios)?;
    let schedulers: Vec<String> = args
        .schedulers
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    if let Some(bad) = schedulers
        .iter()
        .find(|s| !executors::NAMES.contains(&s.as_str()))
    {
        bail!(
            "unknown scheduler {bad:?}; choose from {}",
            executors::NAMES.join(", ")
        );
    }
    if !(args.seconds > 0.0 && args.seconds <= 3600.0) || args.repeat == 0 {
        bail!("--seconds must be in (0, 3600] and --repeat at least 1");
    }
    let cpus = crate::role::resources_from_env()?.cpu_cores;
    let threads = args.threads.unwrap_or((cpus.round() as usize).max(1));
    let window = Duration::from_secs_f64(args.seconds);
    let total_runs = args.repeat * scenarios.len() * schedulers.len();
    eprintln!(
        "bench pool: {threads} threads, {} s per run, {} runs (~{:.0} s)",
        args.seconds,
        total_runs,
        total_runs as f64 * (args.seconds + WARM_UP.as_secs_f64() + 1.0)
    );

    let mut samples: Vec<Vec<Row>> = Vec::new();
    let mut costs: Vec<Vec<f64>> = vec![Vec::new(); schedulers.len()];
    let mut done = 0;
    for _ in 0..args.repeat {
        for (i, name) in schedulers.iter().enumerate() {
            costs[i].push(noop_task_cost_ns(name, threads));
        }
        for (si, scenario) in scenarios.iter().enumerate() {
            for (ki, name) in schedulers.iter().enumerate() {
                let row = run_once(name, threads, *scenario, window, args.big_batches);
                done += 1;
                eprintln!(
                    "  [{done}/{total_runs}] {name:5} big={} load={}: small p99 {:.0} µs, {:.0}/s, big share {:.2}",
                    scenario.big_streams,
                    scenario.small_load,
                    row.small_p99_us,
                    row.small_done_per_s,
                    row.big_share
                );
                let index = si * schedulers.len() + ki;
                if samples.len() <= index {
                    samples.resize(index + 1, Vec::new());
                }
                samples[index].push(row);
            }
        }
    }
    let rows: Vec<Row> = samples
        .iter()
        .enumerate()
        .map(|(index, runs)| {
            let mut row = median_row(runs);
            row.task_cost_ns = median(&costs[index % schedulers.len()]);
            row
        })
        .collect();

    print!("{}", table(&rows));
    for line in verdicts(&rows) {
        println!("{line}");
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let csv_path = dir.join("pool.csv");
        std::fs::write(&csv_path, csv(&rows))
            .with_context(|| format!("cannot write {}", csv_path.display()))?;
        let png_path = dir.join("pool.png");
        plot::pool_chart(&rows, &png_path)
            .with_context(|| format!("cannot draw {}", png_path.display()))?;
        println!("wrote {} and {}", csv_path.display(), png_path.display());
    }
    Ok(())
}

/// Spins the CPU for `d` and returns how long it really spun.
fn spin(d: Duration) -> Duration {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
    start.elapsed()
}

/// xorshift64*: a small seeded generator, so every scheduler sees the same arrival pattern.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[derive(Default)]
struct Recorder {
    small_latency_us: Mutex<Vec<u32>>,
    small_completed: AtomicU64,
    small_ns: AtomicU64,
    big_ns: AtomicU64,
    big_durations_ms: Mutex<Vec<f64>>,
    small_in_flight: AtomicI64,
    stop: AtomicBool,
}

struct Window {
    start: Instant,
    end: Instant,
}

impl Window {
    fn contains(&self, t: Instant) -> bool {
        t >= self.start && t < self.end
    }
}

fn run_once(
    name: &str,
    threads: usize,
    scenario: Scenario,
    length: Duration,
    big_batches: u32,
) -> Row {
    let scheduler: Arc<dyn Scheduler> = Arc::from(executors::build(name, threads));
    let rec = Arc::new(Recorder::default());
    let start = Instant::now();
    let window = Arc::new(Window {
        start: start + WARM_UP,
        end: start + WARM_UP + length,
    });

    let streams: Vec<_> = (0..scenario.big_streams)
        .map(|stream| {
            let (scheduler, rec, window) = (scheduler.clone(), rec.clone(), window.clone());
            std::thread::spawn(move || {
                big_stream(stream as u64, &*scheduler, &rec, &window, big_batches)
            })
        })
        .collect();
    small_arrivals(&*scheduler, &rec, &window, threads, scenario.small_load);
    rec.stop.store(true, Ordering::Relaxed);
    for s in streams {
        s.join().expect("big stream thread");
    }
    let deadline = Instant::now() + DRAIN_WAIT;
    while rec.small_in_flight.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(scheduler);

    let mut latencies = std::mem::take(&mut *rec.small_latency_us.lock().expect("recorder lock"));
    latencies.sort_unstable();
    let percentile = |p: f64| -> f64 {
        if latencies.is_empty() {
            return 0.0;
        }
        let i = ((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1;
        latencies[i] as f64
    };
    let small_ns = rec.small_ns.load(Ordering::Relaxed) as f64;
    let big_ns = rec.big_ns.load(Ordering::Relaxed) as f64;
    let big_durations = rec.big_durations_ms.lock().expect("recorder lock").clone();
    Row {
        scheduler: name.to_string(),
        big_streams: scenario.big_streams,
        small_load: scenario.small_load,
        small_p50_us: percentile(0.50),
        small_p99_us: percentile(0.99),
        small_p999_us: percentile(0.999),
        small_done_per_s: rec.small_completed.load(Ordering::Relaxed) as f64 / length.as_secs_f64(),
        big_share: if small_ns + big_ns > 0.0 {
            big_ns / (small_ns + big_ns)
        } else {
            0.0
        },
        big_done: big_durations.len() as f64,
        big_median_ms: median(&big_durations),
        task_cost_ns: 0.0,
    }
}

/// Issues Poisson arrivals of small tasks until the window ends.
fn small_arrivals(
    scheduler: &dyn Scheduler,
    rec: &Arc<Recorder>,
    window: &Arc<Window>,
    threads: usize,
    load: f64,
) {
    if load <= 0.0 {
        std::thread::sleep(window.end.saturating_duration_since(Instant::now()));
        return;
    }
    let mean_cost_s = (SMALL_COST_US.0 + SMALL_COST_US.1) as f64 / 2.0 / 1e6;
    let rate_per_s = load * threads as f64 / mean_cost_s;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut next = Instant::now();
    let mut group = 1u64 << 40;
    while next < window.end {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
            continue;
        }
        while next <= now {
            let arrival = next;
            let cost = Duration::from_micros(
                SMALL_COST_US.0
                    + (rng.next_f64() * (SMALL_COST_US.1 - SMALL_COST_US.0) as f64) as u64,
            );
            let (rec2, window2) = (rec.clone(), window.clone());
            rec.small_in_flight.fetch_add(1, Ordering::SeqCst);
            group += 1;
            scheduler.spawn(
                Class::Small,
                group,
                Box::pin(async move {
                    let began = Instant::now();
                    let spun = spin(cost);
                    let finished = Instant::now();
                    if window2.contains(began) {
                        rec2.small_ns
                            .fetch_add(spun.as_nanos() as u64, Ordering::Relaxed);
                    }
                    if window2.contains(arrival) {
                        let us = (finished - arrival).as_micros().min(u32::MAX as u128) as u32;
                        rec2.small_latency_us
                            .lock()
                            .expect("recorder lock")
                            .push(us);
                    }
                    if window2.contains(finished) {
                        rec2.small_completed.fetch_add(1, Ordering::Relaxed);
                    }
                    rec2.small_in_flight.fetch_sub(1, Ordering::SeqCst);
                }),
            );
            next += Duration::from_secs_f64(-(1.0 - rng.next_f64()).ln() / rate_per_s);
        }
    }
}

/// One closed loop of big requests until the recorder says stop.
fn big_stream(
    stream: u64,
    scheduler: &dyn Scheduler,
    rec: &Arc<Recorder>,
    window: &Arc<Window>,
    batches: u32,
) {
    let mut request = 0u64;
    while !rec.stop.load(Ordering::Relaxed) {
        request += 1;
        let (tx, rx) = std::sync::mpsc::channel::<bool>();
        let (rec2, window2) = (rec.clone(), window.clone());
        let started = Instant::now();
        let native_yield = scheduler.native_yield();
        scheduler.spawn(
            Class::Big,
            (stream + 1) << 32 | request,
            Box::pin(async move {
                for _ in 0..batches {
                    if rec2.stop.load(Ordering::Relaxed) {
                        let _ = tx.send(false);
                        return;
                    }
                    let began = Instant::now();
                    let spun = spin(BIG_BATCH);
                    if window2.contains(began) {
                        rec2.big_ns
                            .fetch_add(spun.as_nanos() as u64, Ordering::Relaxed);
                    }
                    if native_yield {
                        tokio::task::yield_now().await;
                    } else {
                        pool::yield_now().await;
                    }
                }
                let _ = tx.send(true);
            }),
        );
        let finished_all = rx.recv().unwrap_or(false);
        if finished_all && window.contains(Instant::now()) {
            let ms = started.elapsed().as_secs_f64() * 1e3;
            rec.big_durations_ms.lock().expect("recorder lock").push(ms);
        }
    }
}

fn process_cpu_ns() -> u64 {
    // SAFETY: getrusage fills the struct we pass.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// CPU time of the whole process per spawned no-op task (spawn, schedule, run, finish).
fn noop_task_cost_ns(name: &str, threads: usize) -> f64 {
    let scheduler = executors::build(name, threads);
    let remaining = Arc::new(AtomicI64::new(NOOP_TASKS as i64));
    // Let the threads start and settle before measuring.
    std::thread::sleep(Duration::from_millis(100));
    let cpu_before = process_cpu_ns();
    for i in 0..NOOP_TASKS {
        let r = remaining.clone();
        scheduler.spawn(
            Class::Small,
            i + 1,
            Box::pin(async move {
                r.fetch_sub(1, Ordering::Release);
            }),
        );
    }
    let deadline = Instant::now() + DRAIN_WAIT;
    while remaining.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(200));
    }
    let cost = (process_cpu_ns() - cpu_before) as f64 / NOOP_TASKS as f64;
    drop(scheduler);
    cost
}

fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

fn median_row(runs: &[Row]) -> Row {
    let m = |f: fn(&Row) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    Row {
        scheduler: runs[0].scheduler.clone(),
        big_streams: runs[0].big_streams,
        small_load: runs[0].small_load,
        small_p50_us: m(|r| r.small_p50_us),
        small_p99_us: m(|r| r.small_p99_us),
        small_p999_us: m(|r| r.small_p999_us),
        small_done_per_s: m(|r| r.small_done_per_s),
        big_share: m(|r| r.big_share),
        big_done: m(|r| r.big_done),
        big_median_ms: m(|r| r.big_median_ms),
        task_cost_ns: 0.0,
    }
}

pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from(
        "scheduler,big_streams,small_load,small_p50_us,small_p99_us,small_p999_us,small_done_per_s,big_share,big_done,task_cost_ns\n",
    );
    for r in rows {
        out.push_str(&format!(
            "{},{},{},{:.0},{:.0},{:.0},{:.0},{:.3},{:.0},{:.0}\n",
            r.scheduler,
            r.big_streams,
            r.small_load,
            r.small_p50_us,
            r.small_p99_us,
            r.small_p999_us,
            r.small_done_per_s,
            r.big_share,
            r.big_done,
            r.task_cost_ns
        ));
    }
    out
}

fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| scheduler | big streams | small load | small p50 µs | small p99 µs | small p99.9 µs | small done/s | big share | big done | big median ms | task cost ns |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.3} | {:.0} | {:.0} | {:.0} |\n",
            r.scheduler,
            r.big_streams,
            r.small_load,
            r.small_p50_us,
            r.small_p99_us,
            r.small_p999_us,
            r.small_done_per_s,
            r.big_share,
            r.big_done,
            r.big_median_ms,
            r.task_cost_ns
        ));
    }
    out
}

/// The targets, read off the rows that exist in this run.
fn verdicts(rows: &[Row]) -> Vec<String> {
    let find = |name: &str, big: usize, load: f64| {
        rows.iter()
            .find(|r| r.scheduler == name && r.big_streams == big && r.small_load == load)
    };
    let mut out = Vec::new();
    let mixed: Vec<(usize, f64)> = rows
        .iter()
        .filter(|r| r.big_streams > 0 && r.small_load < 1.0)
        .map(|r| (r.big_streams, r.small_load))
        .collect();
    for (big, load) in mixed.iter().copied().take(1) {
        let Some(atoll) = find("atoll", big, load) else {
            continue;
        };
        for other in ["tokio", "fifo", "fixed"] {
            if let Some(o) = find(other, big, load) {
                out.push(format!(
                    "big={big} load={load}: atoll p99 / {other} p99 = {:.2} (target <= 0.33); small/s atoll / {other} = {:.2} (target >= 1)",
                    atoll.small_p99_us / o.small_p99_us.max(1.0),
                    atoll.small_done_per_s / o.small_done_per_s.max(1.0)
                ));
            }
        }
        out.push(format!(
            "big={big} load={load}: atoll big requests finished: {:.0} (median {:.0} ms)",
            atoll.big_done, atoll.big_median_ms
        ));
    }
    for r in rows
        .iter()
        .filter(|r| r.scheduler == "atoll" && r.big_streams > 0 && r.small_load >= 1.0)
    {
        out.push(format!(
            "big={} load={} (saturated): atoll small share {:.3} (target 0.80 +- 0.05)",
            r.big_streams,
            r.small_load,
            1.0 - r.big_share
        ));
    }
    if let (Some(a), Some(t)) = (
        rows.iter().find(|r| r.scheduler == "atoll"),
        rows.iter().find(|r| r.scheduler == "tokio"),
    ) {
        out.push(format!(
            "task cost: atoll {:.0} ns, tokio {:.0} ns (target: atoll <= tokio)",
            a.task_cost_ns, t.task_cost_ns
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_parse_and_bad_ones_are_refused() {
        assert_eq!(
            parse_scenarios("0:0.3, 4:1.5").unwrap(),
            vec![
                Scenario {
                    big_streams: 0,
                    small_load: 0.3
                },
                Scenario {
                    big_streams: 4,
                    small_load: 1.5
                }
            ]
        );
        for bad in ["4", "x:0.3", "4:y", "4:-1", "4:NaN"] {
            assert!(parse_scenarios(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_scheduler_runs_small_and_big_work_to_the_end() {
        for name in executors::NAMES {
            let row = run_once(
                name,
                2,
                Scenario {
                    big_streams: 1,
                    small_load: 0.2,
                },
                Duration::from_millis(300),
                5,
            );
            assert!(row.small_done_per_s > 0.0, "{name}: {row:?}");
            assert!(row.big_done > 0.0, "{name}: {row:?}");
            assert!(
                row.small_p50_us > 0.0 && row.small_p50_us <= row.small_p99_us,
                "{name}: {row:?}"
            );
        }
    }

    #[test]
    fn csv_has_the_agreed_header_and_one_line_per_row() {
        let rows = vec![
            Row {
                scheduler: "atoll".into(),
                ..Row::default()
            },
            Row {
                scheduler: "tokio".into(),
                ..Row::default()
            },
        ];
        let text = csv(&rows);
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some(
                "scheduler,big_streams,small_load,small_p50_us,small_p99_us,small_p999_us,small_done_per_s,big_share,big_done,task_cost_ns"
            )
        );
        assert_eq!(lines.count(), 2);
    }
}
