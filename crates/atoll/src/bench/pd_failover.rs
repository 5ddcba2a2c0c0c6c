//! `atoll bench pd-failover`: what a PD leader change costs the timestamp oracle. It starts
//! three pd members (child processes of this binary, on free loopback ports, in a temp dir it
//! removes), lets `--clients` callers take timestamps through their own `pd-client` all along,
//! and meanwhile:
//! 1. `--kills` times: SIGKILL of the leader, then the member's restart once another leads;
//! 2. `--pauses` times: SIGSTOP of the leader (its connections stay open and silent, as
//!    behind a partition), and SIGCONT once the callers get timestamps from another;
//! 3. `--transfers` times: `POST /pd/api/v1/leader/transfer/NAME` to the next member.
//!
//! For each event, the TSO gap: from the last timestamp any caller got before it to the first
//! one after it; p50 and p99 per kind. Every caller checks that its timestamps only grow, and
//! every timestamp handed out after an event began must be above every one handed out before
//! it (a new leader never serves below its predecessor). With `--throughput-rounds N`, it
//! also measures timestamps per second of the three-member group against a single pd started
//! beside it, alternating the two N times (median ratio).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;

#[derive(Args)]
pub struct PdFailoverArgs {
    #[arg(long, default_value_t = 20)]
    kills: usize,
    #[arg(long, default_value_t = 0)]
    pauses: usize,
    #[arg(long, default_value_t = 20)]
    transfers: usize,
    /// Callers taking timestamps, each through its own pd-client.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Rounds of the throughput comparison (three members against one); 0 skips it.
    #[arg(long, default_value_t = 0)]
    throughput_rounds: usize,
}

struct Pd {
    name: String,
    client: String,
    args: Vec<String>,
    child: Option<Child>,
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Pd {
    fn start(&mut self, exe: &Path) -> anyhow::Result<()> {
        let child = Command::new(exe)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", self.name))?;
        self.child = Some(child);
        Ok(())
    }

    /// SIGSTOP (`pause`) or SIGCONT.
    fn pause(&self, pause: bool) {
        if let Some(c) = &self.child {
            let signal = if pause { libc::SIGSTOP } else { libc::SIGCONT };
            crate::playground::signal_child(c, signal);
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Three members, or one (`initial-cluster` of itself alone), in `dir`.
fn plan(dir: &Path, members: usize) -> anyhow::Result<Vec<Pd>> {
    let ports: Vec<(u16, u16)> = (0..members)
        .map(|_| Ok((free_port()?, free_port()?)))
        .collect::<anyhow::Result<_>>()?;
    let initial = ports
        .iter()
        .enumerate()
        .map(|(i, (_, peer))| format!("m{i}=http://127.0.0.1:{peer}"))
        .collect::<Vec<_>>()
        .join(",");
    Ok(ports
        .iter()
        .enumerate()
        .map(|(i, (client, peer))| Pd {
            name: format!("m{i}"),
            client: format!("127.0.0.1:{client}"),
            args: vec![
                "pd".into(),
                format!("--name=m{i}"),
                format!("--client-urls=http://127.0.0.1:{client}"),
                format!("--peer-urls=http://127.0.0.1:{peer}"),
                format!("--initial-cluster={initial}"),
                format!("--data-dir={}", dir.join(format!("m{i}")).display()),
            ],
            child: None,
        })
        .collect())
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

/// The leader's name, asked of any running member.
fn leader(pds: &[Pd]) -> Option<String> {
    let agent = agent();
    pds.iter().filter(|p| p.child.is_some()).find_map(|p| {
        let mut r = agent
            .get(format!("http://{}/pd/api/v1/leader", p.client))
            .call()
            .ok()?;
        if !r.status().is_success() {
            return None;
        }
        let body: serde_json::Value = r.body_mut().read_json().ok()?;
        body["name"].as_str().map(str::to_string)
    })
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        if Instant::now() > deadline {
            bail!("{what} did not happen within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// What the callers saw.
#[derive(Default)]
struct Seen {
    /// When each timestamp was asked for and received, with the timestamp, across callers.
    served: Mutex<Vec<(Instant, Instant, u64)>>,
    out_of_order: AtomicU64,
    errors: AtomicU64,
    first_error: Mutex<Option<String>>,
}

async fn caller(endpoints: Vec<String>, seen: Arc<Seen>, stop: Arc<AtomicBool>) {
    let client = loop {
        match pd_client::PdClient::connect(&endpoints).await {
            Ok(c) => break c,
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    let mut last = 0;
    while !stop.load(Ordering::Relaxed) {
        let asked = Instant::now();
        match client.get_ts().await {
            Ok(ts) => {
                if ts <= last {
                    seen.out_of_order.fetch_add(1, Ordering::Relaxed);
                }
                last = ts;
                seen.served
                    .lock()
                    .expect("seen lock")
                    .push((asked, Instant::now(), ts));
            }
            Err(e) => {
                seen.errors.fetch_add(1, Ordering::Relaxed);
                seen.first_error
                    .lock()
                    .expect("seen lock")
                    .get_or_insert_with(|| e.to_string());
            }
        }
    }
}

/// How long after an event no timestamp came: the longest pause between two timestamps
/// received from the last one before `at` until `window` after it. And whether every
/// timestamp asked for after `at` is above every one received before.
fn gap_at(
    served: &[(Instant, Instant, u64)],
    at: Instant,
    window: Duration,
) -> Option<(Duration, bool)> {
    let max_before = served
        .iter()
        .filter(|(_, received, _)| *received <= at)
        .map(|(_, _, ts)| *ts)
        .max()?;
    let ordered = served
        .iter()
        .filter(|(asked, _, _)| *asked > at)
        .all(|(_, _, ts)| *ts > max_before);
    let mut times: Vec<Instant> = served
        .iter()
        .map(|(_, received, _)| *received)
        .filter(|t| *t <= at + window)
        .collect();
    times.sort();
    let first = times.partition_point(|t| *t <= at).checked_sub(1)?;
    let gap = times[first..]
        .windows(2)
        .map(|w| w[1].duration_since(w[0]))
        .max()?;
    Some((gap, ordered))
}

/// How long after a kill or a transfer its gap is looked for.
const EVENT_WINDOW: Duration = Duration::from_secs(5);
/// How long after a pause: callers find the leader silent only when a call times out.
const PAUSE_WINDOW: Duration = Duration::from_secs(20);

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn run(args: PdFailoverArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("cannot find the atoll binary")?;
    let dir = tempfile::Builder::new()
        .prefix("atoll-pd-failover")
        .tempdir()?;
    let mut pds = plan(&dir.path().join("three"), 3)?;
    for p in &mut pds {
        p.start(&exe)?;
    }
    wait_for("a pd leader", || leader(&pds).is_some())?;
    if args.throughput_rounds > 0 {
        throughput(&exe, dir.path(), &pds, args.throughput_rounds)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let endpoints: Vec<String> = pds.iter().map(|p| p.client.clone()).collect();
    let callers: Vec<_> = (0..args.clients)
        .map(|_| runtime.spawn(caller(endpoints.clone(), seen.clone(), stop.clone())))
        .collect();
    wait_for("the first timestamps", || {
        seen.served.lock().expect("seen lock").len() > 100
    })?;
    let mut kills = Vec::new();
    for _ in 0..args.kills {
        let name = leader(&pds).context("no pd leader")?;
        std::thread::sleep(Duration::from_millis(300));
        let at = Instant::now();
        let p = pds.iter_mut().find(|p| p.name == name).expect("a member");
        p.kill();
        wait_for("a new pd leader", || {
            leader(&pds).is_some_and(|l| l != name)
        })?;
        std::thread::sleep(Duration::from_millis(500));
        kills.push(at);
        let p = pds.iter_mut().find(|p| p.name == name).expect("a member");
        p.start(&exe)?;
        std::thread::sleep(Duration::from_millis(1000));
    }
    let mut pauses = Vec::new();
    for _ in 0..args.pauses {
        let name = leader(&pds).context("no pd leader")?;
        std::thread::sleep(Duration::from_millis(300));
        let at = Instant::now();
        let p = pds.iter().find(|p| p.name == name).expect("a member");
        p.pause(true);
        let served_after = wait_for("timestamps while the pd leader is stopped", || {
            let served = seen.served.lock().expect("seen lock");
            served.iter().filter(|(asked, _, _)| *asked > at).count() > 100
        });
        p.pause(false);
        served_after?;
        pauses.push(at);
        std::thread::sleep(Duration::from_millis(1000));
    }
    let mut transfers = Vec::new();
    for _ in 0..args.transfers {
        let name = leader(&pds).context("no pd leader")?;
        let next = pds
            .iter()
            .map(|p| p.name.clone())
            .cycle()
            .skip_while(|n| *n != name)
            .nth(1)
            .expect("three members");
        std::thread::sleep(Duration::from_millis(300));
        let at = Instant::now();
        let client = &pds[0].client;
        let mut r = agent()
            .post(format!("http://{client}/pd/api/v1/leader/transfer/{next}"))
            .send_empty()?;
        if !r.status().is_success() {
            bail!("transfer to {next}: {}", r.body_mut().read_to_string()?);
        }
        std::thread::sleep(Duration::from_millis(500));
        transfers.push(at);
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    for c in callers {
        let _ = runtime.block_on(c);
    }
    let served = seen.served.lock().expect("seen lock");
    let report = |kind: &str, events: &[Instant], window: Duration| -> anyhow::Result<()> {
        let mut gaps = Vec::new();
        for &at in events {
            let (gap, ordered) =
                gap_at(&served, at, window).context("no timestamp around an event")?;
            if !ordered {
                seen.out_of_order.fetch_add(1, Ordering::Relaxed);
            }
            gaps.push(gap);
        }
        gaps.sort();
        println!(
            "pd_failover event={kind} count={} gap_p50_ms={:.0} gap_p99_ms={:.0} gap_max_ms={:.0}",
            gaps.len(),
            ms(percentile(&gaps, 0.5)),
            ms(percentile(&gaps, 0.99)),
            ms(gaps.last().copied().unwrap_or_default())
        );
        Ok(())
    };
    report("kill-9", &kills, EVENT_WINDOW)?;
    report("sigstop", &pauses, PAUSE_WINDOW)?;
    report("transfer", &transfers, EVENT_WINDOW)?;
    println!(
        "pd_failover timestamps={} out_of_order={} failed_calls={}{}",
        served.len(),
        seen.out_of_order.load(Ordering::Relaxed),
        seen.errors.load(Ordering::Relaxed),
        match &*seen.first_error.lock().expect("seen lock") {
            Some(e) => format!(" first_failure={e:?}"),
            None => String::new(),
        }
    );
    Ok(())
}

/// Timestamps per second of 8 streams on the three-member group's leader against a single
/// pd, alternating `rounds` times; prints both medians and their ratio.
fn throughput(exe: &Path, dir: &Path, pds: &[Pd], rounds: usize) -> anyhow::Result<()> {
    let mut single = plan(&dir.join("single"), 1)?;
    single[0].start(exe)?;
    wait_for("the single pd", || leader(&single).is_some())?;
    let leader_name = leader(pds).context("no pd leader")?;
    let three = pds
        .iter()
        .find(|p| p.name == leader_name)
        .expect("a member")
        .client
        .clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let measure = |pd: &str| -> anyhow::Result<f64> {
        let seconds = 3.0;
        let end = Instant::now() + Duration::from_secs_f64(seconds);
        let requests = runtime.block_on(super::tso_bench::streams(pd, 8, 1, end))?;
        Ok(requests as f64 / seconds)
    };
    let (mut one, mut three_members, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let a = measure(&single[0].client)?;
        let b = measure(&three)?;
        one.push(a);
        three_members.push(b);
        ratios.push(b / a);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "pd_tso_throughput rounds={rounds} single_per_s={:.0} three_members_per_s={:.0} ratio_median={:.2}",
        median(&mut one),
        median(&mut three_members),
        median(&mut ratios)
    );
    Ok(())
}
