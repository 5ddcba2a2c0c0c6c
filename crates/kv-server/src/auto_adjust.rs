//! `readpool.unified.auto-adjust-pool-size`: a tuner that grows or shrinks the unified read
//! pool by one thread every [`INTERVAL`], following TiKV's rules (KNOBS.md §1.1):
//!
//! - grow when below `max-thread-count`, threads are over 80 % busy, more than 3 tasks per
//!   thread are in flight, and the process still has CPU headroom;
//! - shrink when the work would fit in one thread less at 70 % busy and tasks are few;
//! - shrink when `cpu-threshold` (0 = off) is set and the pool uses more than that share of
//!   the CPUs plus 10 % leeway;
//! - never leave `[min-thread-count, max-thread-count]`; when switched off, snap back to
//!   `max-thread-count`.
//!
//! [`decide`] is pure; [`spawn`] samples the pool and the process and applies it.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use config::ConfigController;
use pool::ReadPool;

pub const INTERVAL: Duration = Duration::from_secs(10);

/// What the tuner saw over the last interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub threads: usize,
    /// Pool run time per thread per wall time, 0..1.
    pub busy_ratio: f64,
    /// Tasks in flight per thread at the end of the interval.
    pub tasks_per_thread: f64,
    /// Cores the pool used (run time per wall time).
    pub pool_cores: f64,
    /// Cores the whole process used.
    pub process_cores: f64,
    /// Cores the process may use.
    pub quota_cores: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    pub min: usize,
    pub max: usize,
    /// `readpool.unified.cpu-threshold`; 0 = off.
    pub cpu_threshold: f64,
}

/// The thread count for the next interval.
pub fn decide(s: &Sample, b: &Bounds) -> usize {
    let n = s.threads.clamp(b.min, b.max);
    if n != s.threads {
        return n;
    }
    if b.cpu_threshold > 0.0 && s.pool_cores > (b.cpu_threshold + 0.1) * s.quota_cores && n > b.min
    {
        return n - 1;
    }
    let headroom = s.process_cores < 0.9 * s.quota_cores;
    if n < b.max && s.busy_ratio > 0.8 && s.tasks_per_thread > 3.0 && headroom {
        return n + 1;
    }
    if n > b.min && (s.busy_ratio * n as f64) < 0.7 * (n - 1) as f64 && s.tasks_per_thread < 1.0 {
        return n - 1;
    }
    n
}

fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we pass.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Starts the tuner thread; it stops when `stop` is dropped or sends.
pub fn spawn(
    pool: Arc<ReadPool>,
    controller: Arc<ConfigController>,
    stop: Receiver<()>,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("readpool-tuner".into())
        .spawn(move || {
            let mut last = (
                Instant::now(),
                pool.stats().run_ns.iter().sum::<u64>(),
                process_cpu_seconds(),
            );
            loop {
                match stop.recv_timeout(INTERVAL) {
                    Err(RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
                let config = controller.current();
                let max = config.int("readpool.unified.max-thread-count") as usize;
                let stats = pool.stats();
                let now = (
                    Instant::now(),
                    stats.run_ns.iter().sum::<u64>(),
                    process_cpu_seconds(),
                );
                let wall = now.0.duration_since(last.0).as_secs_f64().max(1e-3);
                let pool_cores = (now.1 - last.1) as f64 / 1e9 / wall;
                let sample = Sample {
                    threads: stats.active_threads,
                    busy_ratio: pool_cores / stats.active_threads.max(1) as f64,
                    tasks_per_thread: stats.in_flight as f64 / stats.active_threads.max(1) as f64,
                    pool_cores,
                    process_cores: (now.2 - last.2) / wall,
                    quota_cores: config.resources().cpu_cores,
                };
                last = now;
                let target = if config.bool("readpool.unified.auto-adjust-pool-size") {
                    decide(
                        &sample,
                        &Bounds {
                            min: config.int("readpool.unified.min-thread-count") as usize,
                            max,
                            cpu_threshold: config.float("readpool.unified.cpu-threshold"),
                        },
                    )
                } else {
                    max
                };
                if target != stats.active_threads {
                    tracing::info!(
                        from = stats.active_threads,
                        to = target,
                        ?sample,
                        "unified read pool auto-adjusted"
                    );
                    pool.resize(target);
                }
            }
        })
        .expect("the OS starts the tuner thread")
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: Bounds = Bounds {
        min: 1,
        max: 8,
        cpu_threshold: 0.0,
    };

    fn sample(threads: usize, busy_ratio: f64, tasks_per_thread: f64) -> Sample {
        Sample {
            threads,
            busy_ratio,
            tasks_per_thread,
            pool_cores: busy_ratio * threads as f64,
            process_cores: busy_ratio * threads as f64,
            quota_cores: 16.0,
        }
    }

    #[test]
    fn grows_only_when_busy_queued_and_with_headroom() {
        assert_eq!(decide(&sample(4, 0.9, 5.0), &BOUNDS), 5);
        assert_eq!(
            decide(&sample(4, 0.9, 2.0), &BOUNDS),
            4,
            "few tasks: no need"
        );
        assert_eq!(decide(&sample(4, 0.7, 5.0), &BOUNDS), 4, "not busy enough");
        assert_eq!(decide(&sample(8, 0.9, 5.0), &BOUNDS), 8, "at max");
        let no_headroom = Sample {
            process_cores: 15.0,
            ..sample(4, 0.9, 5.0)
        };
        assert_eq!(decide(&no_headroom, &BOUNDS), 4);
    }

    #[test]
    fn shrinks_when_the_work_fits_in_one_thread_less() {
        assert_eq!(decide(&sample(4, 0.3, 0.5), &BOUNDS), 3);
        assert_eq!(
            decide(&sample(4, 0.6, 0.5), &BOUNDS),
            4,
            "0.6*4 = 2.4 > 0.7*3"
        );
        assert_eq!(decide(&sample(1, 0.0, 0.0), &BOUNDS), 1, "at min");
    }

    #[test]
    fn the_cpu_threshold_forces_a_shrink_and_bounds_always_hold() {
        let hot = Bounds {
            cpu_threshold: 0.25,
            ..BOUNDS
        };
        assert_eq!(
            decide(&sample(8, 0.9, 5.0), &hot),
            7,
            "7.2 cores > (0.25+0.1)*16"
        );
        assert_eq!(
            decide(&sample(10, 0.5, 1.0), &BOUNDS),
            8,
            "above max after max shrank"
        );
        assert_eq!(
            decide(&sample(1, 0.5, 1.0), &Bounds { min: 2, ..BOUNDS }),
            2
        );
    }
}
