//! Metrics every role exports: process CPU and memory (Prometheus' standard `process_*`
//! family) and `atoll_thread_cpu_seconds_total{name, tid}`, the CPU each thread used, read
//! from `/proc/self/task/<tid>/stat` at scrape time; and the CPU and memory limits the
//! kernel enforces on the process, also read at scrape time.
//!
//! `name` is the thread's name with a trailing `-<n>` index removed, so every thread of a pool
//! (`grpc-0`, `grpc-1`) shares one name; a dashboard sums by `name` to draw "gRPC poll CPU",
//! "Scheduler worker CPU" or "Unified read pool CPU" (KNOBS.md §5). Pools must therefore
//! name their threads `<pool>-<index>`.

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Encoder, Opts, Registry, TextEncoder};

/// A registry with the process and thread collectors already in it.
pub fn new_registry() -> Registry {
    let registry = Registry::new();
    let process = prometheus::process_collector::ProcessCollector::for_self();
    registry
        .register(Box::new(process))
        .expect("process collector registers once");
    registry
        .register(Box::new(ThreadCpuCollector::new()))
        .expect("thread collector registers once");
    registry
        .register(Box::new(ProcessFigures::new()))
        .expect("process figures register once");
    registry
}

/// Prometheus text exposition of everything in `registry`.
pub fn render(registry: &Registry) -> String {
    let mut out = Vec::new();
    TextEncoder::new()
        .encode(&registry.gather(), &mut out)
        .expect("encoding to a Vec cannot fail");
    String::from_utf8(out).expect("Prometheus text is UTF-8")
}

/// One thread as `/proc/self/task/<tid>/stat` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadStat {
    pub tid: u32,
    pub name: String,
    /// `R`, `S`, `D`, ... as the kernel reports it.
    pub state: char,
    pub cpu_seconds: f64,
}

/// `_SC_CLK_TCK`: the unit of the CPU times in `/proc`.
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64
}

/// Every thread of this process, in tid order.
pub fn threads() -> Vec<ThreadStat> {
    let ticks_per_sec = ticks_per_second();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut out: Vec<ThreadStat> = dir
        .flatten()
        .filter_map(|entry| {
            let tid = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            parse_stat(tid, &stat, ticks_per_sec)
        })
        .collect();
    out.sort_by_key(|t| t.tid);
    out
}

/// Parses one `stat` line: `tid (comm) state ... utime stime ...` (fields 14 and 15).
pub fn parse_stat(tid: u32, stat: &str, ticks_per_sec: f64) -> Option<ThreadStat> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    let state = rest.first()?.chars().next()?;
    // `rest[0]` is field 3 (state), so field N is rest[N - 3].
    let utime: f64 = rest.get(11)?.parse().ok()?;
    let stime: f64 = rest.get(12)?.parse().ok()?;
    Some(ThreadStat {
        tid,
        name,
        state,
        cpu_seconds: (utime + stime) / ticks_per_sec,
    })
}

/// `grpc-3` → `grpc`; names without an index stay as they are.
pub fn pool_name(thread_name: &str) -> &str {
    match thread_name.rsplit_once('-') {
        Some((pool, index))
            if !pool.is_empty()
                && index.chars().all(|c| c.is_ascii_digit())
                && !index.is_empty() =>
        {
            pool
        }
        _ => thread_name,
    }
}

struct ThreadCpuCollector {
    desc: Desc,
}

impl ThreadCpuCollector {
    fn new() -> ThreadCpuCollector {
        let opts = Opts::new(
            "atoll_thread_cpu_seconds_total",
            "CPU seconds used by each thread, by pool name",
        );
        let desc = Desc::new(
            opts.fq_name(),
            opts.help.clone(),
            vec!["name".into(), "tid".into()],
            Default::default(),
        )
        .expect("valid metric description");
        ThreadCpuCollector { desc }
    }
}

impl Collector for ThreadCpuCollector {
    fn desc(&self) -> Vec<&Desc> {
        vec![&self.desc]
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let counters = prometheus::CounterVec::new(
            Opts::new(
                "atoll_thread_cpu_seconds_total",
                "CPU seconds used by each thread, by pool name",
            ),
            &["name", "tid"],
        )
        .expect("valid metric");
        for t in threads() {
            counters
                .with_label_values(&[pool_name(&t.name), &t.tid.to_string()])
                .inc_by(t.cpu_seconds);
        }
        counters.collect()
    }
}

/// `atoll_process_cpu_seconds_total`, to the clock tick; `atoll_process_cpu_limit_cores` and
/// `atoll_process_memory_limit_bytes`: what the kernel lets this process use (cgroup quota and affinity; the host's figures without them), read
/// at each scrape so that a quota changed at run time shows; not the share a launcher handed
/// down, so that the CPU used can be set against what is enforced.
struct ProcessFigures {
    descs: [Desc; 3],
}

const PROCESS: [(&str, &str); 3] = [
    (
        "atoll_process_cpu_seconds_total",
        "CPU seconds the process used, to the tick (process_cpu_seconds_total counts whole seconds)",
    ),
    (
        "atoll_process_cpu_limit_cores",
        "CPU cores the process may use: its cgroup quota or affinity, else the host's",
    ),
    (
        "atoll_process_memory_limit_bytes",
        "Memory the process may use: its cgroup limit, else the host's",
    ),
];

impl ProcessFigures {
    fn new() -> ProcessFigures {
        let desc = |(name, help): (&str, &str)| {
            Desc::new(name.into(), help.into(), Vec::new(), Default::default())
                .expect("valid metric description")
        };
        ProcessFigures {
            descs: PROCESS.map(desc),
        }
    }
}

impl Collector for ProcessFigures {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let enforced = config::resources::Resources::detect();
        let cpu = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|stat| parse_stat(0, &stat, ticks_per_second()))
            .map_or(0.0, |t| t.cpu_seconds);
        let counter = prometheus::Counter::new(PROCESS[0].0, PROCESS[0].1).expect("valid metric");
        counter.inc_by(cpu);
        let mut out = counter.collect();
        let values = [enforced.cpu_cores, enforced.memory_bytes as f64];
        for (&(name, help), value) in PROCESS[1..].iter().zip(values) {
            let gauge = prometheus::Gauge::new(name, help).expect("valid metric");
            gauge.set(value);
            out.extend(gauge.collect());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_spaces_and_parens_in_the_name_parse() {
        let line = "4242 (grpc (x) 1) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0";
        let t = parse_stat(4242, line, 100.0).unwrap();
        assert_eq!(t.name, "grpc (x) 1");
        assert_eq!(t.state, 'S');
        assert_eq!(t.cpu_seconds, 3.0);
        assert_eq!(parse_stat(1, "garbage", 100.0), None);
    }

    #[test]
    fn pool_names_drop_the_thread_index() {
        assert_eq!(pool_name("grpc-3"), "grpc");
        assert_eq!(pool_name("unified-read-12"), "unified-read");
        assert_eq!(pool_name("status"), "status");
        assert_eq!(pool_name("raft-engine"), "raft-engine");
        assert_eq!(pool_name("-1"), "-1");
    }

    #[test]
    fn a_busy_named_thread_shows_up_with_its_cpu() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::{Duration, Instant};

        let stop = Arc::new(AtomicBool::new(false));
        let spin_stop = stop.clone();
        let spin = std::thread::Builder::new()
            .name("spintest-0".into())
            .spawn(move || {
                let mut x = 0u64;
                while !spin_stop.load(Ordering::Relaxed) {
                    x = x.wrapping_add(std::hint::black_box(1));
                }
                x
            })
            .unwrap();
        // Bounded wait, not a timing assertion: the busy thread's CPU must become visible.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = render(&new_registry());
            assert!(text.contains("process_cpu_seconds_total"));
            assert!(text.contains("process_resident_memory_bytes"));
            // The thread names itself once it runs, so the first scrapes may not show it yet.
            let seconds = text
                .lines()
                .find(|l| l.starts_with("atoll_thread_cpu_seconds_total{name=\"spintest\""))
                .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
            match seconds {
                Some(s) if s > 0.0 => break,
                _ if Instant::now() > deadline => panic!("no busy spintest thread in\n{text}"),
                _ => {}
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
        spin.join().unwrap();
    }
}
