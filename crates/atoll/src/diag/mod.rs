//! `atoll diag`: finds every node through PD, reads them for a while, and names the
//! bottleneck with its evidence and the knob that relieves it; `--live` prints the verdict
//! every few seconds while a workload runs.
//!
//! - [`collect`]: discovery through PD and the readings (`/metrics`, `/debug/host`,
//!   `/config`, CPU profiles);
//! - [`prom`]: Prometheus text read back;
//! - [`verdict`]: the rules, pure: two readings in, ranked findings out;
//! - [`report`]: the terminal text, the JSON, the zip with its HTML report;
//! - [`svg`]: the report's charts;
//! - [`dashboard`]: the live page PD serves at `/dashboard`, from the same readings.

mod collect;
pub mod dashboard;
mod prom;
mod report;
mod svg;
mod verdict;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;

#[derive(Args)]
pub struct DiagArgs {
    #[command(flatten)]
    tls: crate::cluster_tls::ClusterTlsArgs,
    /// PD client addresses, comma separated (the first that answers is asked).
    #[arg(long, default_value = "127.0.0.1:2379")]
    pd: String,
    /// How long to read the cluster; 30 by default, and until stopped with --live.
    #[arg(long)]
    seconds: Option<u64>,
    /// Seconds between readings: 1 by default, 5 with --live.
    #[arg(long)]
    interval: Option<f64>,
    /// Where to write the zip (the default is atoll-diag-<unix time>.zip); not with --live.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the verdict over the last interval, every interval, while a workload runs.
    #[arg(long)]
    live: bool,
    /// `text` for people; `json` for the ranked findings as a JSON array.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    format: String,
    /// Take no CPU profiles (they cost each node a little CPU while they run).
    #[arg(long)]
    no_profile: bool,
}

/// How long a node has to answer one reading.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
const SECONDS_DEFAULT: u64 = 30;
/// The longest collection: an hour of readings (the profiles cover at most
/// `base::limits::PROFILE_SECONDS_MAX` of it).
const SECONDS_MAX: u64 = 3600;

/// Sleeps until the next multiple of `interval` since `started`: a slow round is followed by
/// a whole interval, never by rounds back to back.
pub(crate) fn sleep_to_next_tick(started: Instant, interval: Duration) {
    let elapsed = started.elapsed().as_secs_f64();
    let ticks = (elapsed / interval.as_secs_f64()).floor() + 1.0;
    let next = started + interval.mul_f64(ticks);
    std::thread::sleep(next.saturating_duration_since(Instant::now()));
}

pub fn run(args: DiagArgs) -> anyhow::Result<()> {
    args.tls.install()?;
    let interval = args.interval.unwrap_or(if args.live { 5.0 } else { 1.0 });
    if !(0.2..=600.0).contains(&interval) {
        bail!("--interval must be between 0.2 and 600 seconds, not {interval}");
    }
    if args
        .seconds
        .is_some_and(|s| (s as f64) < interval.max(1.0) || s > SECONDS_MAX)
    {
        bail!("--seconds must be between --interval ({interval}), at least 1, and {SECONDS_MAX}");
    }
    if args.live && args.out.is_some() {
        bail!("--out is not written with --live");
    }
    let agent = collect::agent(READ_TIMEOUT);
    let mut c = collect::discover(&agent, &args.pd)?;
    if c.targets.is_empty() {
        bail!("PD at {} lists no nodes", c.pd_leader);
    }
    c.read_configs(&agent);
    let interval = Duration::from_secs_f64(interval);
    if args.live {
        return live(&agent, c, interval, args.seconds, &args.format);
    }
    let seconds = args.seconds.unwrap_or(SECONDS_DEFAULT);
    let started = Instant::now();
    let profiles = (!args.no_profile).then(|| {
        let targets = c.targets.clone();
        let profiled = seconds.min(base::limits::PROFILE_SECONDS_MAX);
        let agent = collect::agent(READ_TIMEOUT + Duration::from_secs(profiled));
        std::thread::spawn(move || collect::profiles(&agent, &targets, seconds))
    });
    loop {
        c.read_all(&agent, started);
        if started.elapsed() >= Duration::from_secs(seconds) {
            break;
        }
        sleep_to_next_tick(started, interval);
    }
    if let Some(profiles) = profiles {
        c.set_profiles(profiles.join().expect("the profile thread does not panic"));
    }
    c.read_pd(&agent);
    let window = c.window(0.0);
    if window.nodes.is_empty() {
        bail!(
            "no node answered twice; not collected: {}",
            c.missing.join("; ")
        );
    }
    let findings = verdict::diagnose(&window);
    let summary = report::summary(&window);
    let out = args.out.unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from(format!("atoll-diag-{now}.zip"))
    });
    report::write_zip(&out, &c, &summary, &findings)?;
    if args.format == "json" {
        println!("{}", report::json(&findings));
        if !c.missing.is_empty() {
            eprintln!("not collected: {}", c.missing.join("; "));
        }
        eprintln!("report: {}", out.display());
    } else {
        print!("{}", report::text(&summary, &findings, &c.missing));
        println!("report: {}", out.display());
    }
    Ok(())
}

/// Reads every `interval` and prints the verdict over the last one, until `seconds` (or
/// forever); JSON prints one array per line.
fn live(
    agent: &ureq::Agent,
    mut c: collect::Collection,
    interval: Duration,
    seconds: Option<u64>,
    format: &str,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut previous: Option<f64> = None;
    loop {
        let now = started.elapsed().as_secs_f64();
        c.read_all(agent, started);
        if let Some(since) = previous.replace(now) {
            c.read_pd(agent);
            let window = c.window(since);
            let findings = if window.nodes.is_empty() {
                Vec::new()
            } else {
                verdict::diagnose(&window)
            };
            if window.nodes.is_empty() && format != "json" {
                println!(
                    "atoll diag: no node answered twice; not collected: {}",
                    c.missing.join("; ")
                );
            } else if format == "json" {
                println!("{}", serde_json::to_string(&findings)?);
            } else {
                println!(
                    "{}",
                    report::text(&report::summary(&window), &findings, &c.missing)
                );
            }
            // Only the last reading matters from here on.
            c.keep_last(1);
            c.missing.clear();
        }
        if seconds.is_some_and(|s| started.elapsed() >= Duration::from_secs(s)) {
            return Ok(());
        }
        sleep_to_next_tick(started, interval);
    }
}
