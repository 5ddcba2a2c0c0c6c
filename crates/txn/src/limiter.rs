//! A token bucket on bytes per second, changeable while in use; `0` means no limit. The GC
//! worker waits on it before each delete batch (`gc.max-write-bytes-per-sec`, KNOBS.md §6.4).

use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct Limiter {
    state: Mutex<State>,
}

struct State {
    bytes_per_sec: u64,
    /// Bytes that may go now; negative after a batch larger than the bucket.
    available: f64,
    refilled: Instant,
}

/// The bucket holds at most this many seconds of budget, so an idle spell buys little burst.
const BURST_SECONDS: f64 = 0.1;

impl Limiter {
    pub fn new(bytes_per_sec: u64) -> Limiter {
        Limiter {
            state: Mutex::new(State {
                bytes_per_sec,
                available: 0.0,
                refilled: Instant::now(),
            }),
        }
    }

    pub fn set_bytes_per_sec(&self, bytes_per_sec: u64) {
        self.state
            .lock()
            .expect("limiter lock poisoned")
            .bytes_per_sec = bytes_per_sec;
    }

    pub fn bytes_per_sec(&self) -> u64 {
        self.state
            .lock()
            .expect("limiter lock poisoned")
            .bytes_per_sec
    }

    /// Takes `bytes` from the bucket and says how long to wait before writing them.
    pub fn consume(&self, bytes: usize) -> Duration {
        let mut s = self.state.lock().expect("limiter lock poisoned");
        if s.bytes_per_sec == 0 {
            return Duration::ZERO;
        }
        let rate = s.bytes_per_sec as f64;
        let now = Instant::now();
        let earned = now.duration_since(s.refilled).as_secs_f64() * rate;
        s.available = (s.available + earned).min(rate * BURST_SECONDS);
        s.refilled = now;
        s.available -= bytes as f64;
        if s.available >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-s.available / rate)
        }
    }

    /// `consume`, then sleep for as long as it says.
    pub fn blocking_consume(&self, bytes: usize) {
        let wait = self.consume(bytes);
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_with_the_debt_and_zero_means_no_limit() {
        let l = Limiter::new(1000);
        let first = l.consume(500);
        assert!(
            first >= Duration::from_millis(400) && first <= Duration::from_millis(600),
            "{first:?}"
        );
        let second = l.consume(500);
        assert!(second >= Duration::from_millis(900), "{second:?}");
        l.set_bytes_per_sec(0);
        assert_eq!(l.consume(1 << 30), Duration::ZERO);
    }
}
