//! How many workers may run lower-level (big) slices at once.
//!
//! A big task runs a whole batch (~1 ms) before it can yield, so a small task that arrives
//! while every worker is inside such a batch waits for the first one to end. While small work
//! keeps arriving, the pool therefore keeps enough workers out of lower-level slices to
//! carry the recent level-0 demand: `reserve = ceil(demand in cores)`. The reserve never
//! takes from the lower levels what the share knob promises them (`ceil((1-share)×threads)`,
//! at least one worker), so at saturation the share still holds, and with no small work the
//! reserve is zero and big work uses every thread. The cost is bounded: a reserved worker
//! idles only while recent small demand says a small task is due.
//!
//! Demand is level-0 run time per wall time, smoothed over [`EPOCH`]s (half-life one epoch),
//! so the reserve follows a change in load within a few tens of milliseconds.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub const EPOCH: Duration = Duration::from_millis(10);

/// Workers allowed in lower-level slices at once.
pub fn lower_limit(active: usize, small_request_share: f64, demand_cores: f64) -> usize {
    let promised =
        (((1.0 - small_request_share.clamp(0.0, 1.0)) * active as f64).ceil() as usize).max(1);
    let reserve = (demand_cores.max(0.0).ceil() as usize).min(active.saturating_sub(promised));
    active - reserve
}

/// Smoothed level-0 demand, in milli-cores.
pub struct Demand {
    epoch: Mutex<(Instant, u64)>,
    milli_cores: AtomicU64,
}

impl Demand {
    pub fn new() -> Demand {
        Demand {
            epoch: Mutex::new((Instant::now(), 0)),
            milli_cores: AtomicU64::new(0),
        }
    }

    pub fn cores(&self) -> f64 {
        self.milli_cores.load(Ordering::Relaxed) as f64 / 1000.0
    }

    /// Folds in the level-0 run time so far (`level0_ns`, a running total) once per epoch.
    /// Cheap when called often: one clock read, and a `try_lock` once an epoch has passed.
    pub fn refresh(&self, level0_ns: u64, now: Instant) {
        let Ok(mut epoch) = self.epoch.try_lock() else {
            return;
        };
        let elapsed = now.saturating_duration_since(epoch.0);
        if elapsed < EPOCH {
            return;
        }
        let recent = (level0_ns - epoch.1) as f64 / elapsed.as_nanos() as f64;
        let old = self.cores();
        // Half the weight on the last epoch; longer gaps count as several epochs of it.
        let epochs = (elapsed.as_nanos() / EPOCH.as_nanos()).min(16) as i32;
        let keep = 0.5f64.powi(epochs);
        let smoothed = old * keep + recent * (1.0 - keep);
        self.milli_cores
            .store((smoothed * 1000.0) as u64, Ordering::Relaxed);
        *epoch = (now, level0_ns);
    }
}

impl Default for Demand {
    fn default() -> Demand {
        Demand::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_follows_demand_but_never_takes_the_lower_share() {
        assert_eq!(lower_limit(2, 0.8, 0.0), 2, "no small work, no reserve");
        assert_eq!(lower_limit(2, 0.8, 0.6), 1);
        assert_eq!(
            lower_limit(2, 0.8, 5.0),
            1,
            "the lower levels keep one worker"
        );
        assert_eq!(
            lower_limit(2, 0.0, 0.6),
            2,
            "share 0 promises everything to big work"
        );
        assert_eq!(lower_limit(1, 0.8, 0.9), 1, "one thread cannot be split");
        assert_eq!(lower_limit(16, 0.8, 3.2), 12);
        assert_eq!(lower_limit(16, 0.8, 30.0), 4);
    }

    #[test]
    fn demand_tracks_level_zero_time_per_wall_time() {
        let d = Demand::new();
        let t0 = Instant::now();
        let mut level0 = 0u64;
        let mut now = t0;
        // 0.6 cores of level-0 work for 20 epochs: the estimate converges to 0.6.
        for _ in 0..20 {
            now += EPOCH;
            level0 += (EPOCH.as_nanos() as f64 * 0.6) as u64;
            d.refresh(level0, now);
        }
        assert!((d.cores() - 0.6).abs() < 0.01, "{}", d.cores());
        // Then nothing: it decays towards zero.
        for _ in 0..20 {
            now += EPOCH;
            d.refresh(level0, now);
        }
        assert!(d.cores() < 0.01, "{}", d.cores());
        // Calls within an epoch change nothing.
        let before = d.cores();
        d.refresh(level0 + 1_000_000_000, now + EPOCH / 2);
        assert_eq!(d.cores(), before);
    }
}
