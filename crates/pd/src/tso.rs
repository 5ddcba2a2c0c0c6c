//! The timestamp oracle (KNOBS.md §3.1): `physical_ms << 18 | logical`, never going backwards,
//! not across restarts and not when the wall clock steps back.
//!
//! The rule that makes restarts safe: no timestamp is handed out at or beyond a *window* that
//! was saved durably first. On start, the oracle reads the last saved window and begins above
//! it; while running, whenever the physical time comes within one millisecond of the window it
//! saves a new one `save_interval` ahead before going on. This module is pure: the caller
//! passes the wall clock in and persists the windows it returns ([`crate::window`]).

use base::ts::{LOGICAL_BITS, compose};

/// Logical timestamps per physical millisecond.
pub const LOGICAL_MAX: u64 = 1 << LOGICAL_BITS;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TsoError {
    #[error(
        "the logical part of millisecond {physical_ms} is used up; retry after the next update"
    )]
    LogicalOverflow { physical_ms: u64 },
    #[error("asked for {0} timestamps; between 1 and {LOGICAL_MAX} can be had at once")]
    BadCount(u64),
    #[error(
        "this pd member does not serve timestamps now (not the leader, or its lease or window is not ready)"
    )]
    NotServing,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tso {
    physical_ms: u64,
    logical: u64,
    /// Physical ms up to which timestamps may be handed out (saved durably).
    window_ms: u64,
    save_interval_ms: u64,
}

impl Tso {
    /// Starts after a restart. `saved_window_ms` is the last window saved (0 on a new
    /// cluster). Returns the oracle and the window the caller must save before serving.
    pub fn start(now_ms: u64, saved_window_ms: u64, save_interval_ms: u64) -> (Tso, u64) {
        // Never below the saved window: timestamps up to it may have been handed out already.
        let physical_ms = if now_ms > saved_window_ms {
            now_ms
        } else {
            saved_window_ms + 1
        };
        let window_ms = physical_ms + save_interval_ms;
        (
            Tso {
                physical_ms,
                logical: 0,
                window_ms,
                save_interval_ms,
            },
            window_ms,
        )
    }

    pub fn physical_ms(&self) -> u64 {
        self.physical_ms
    }

    /// The periodic tick (`tso-update-physical-interval`): follows the wall clock forward, or
    /// moves one millisecond on when half the logical space is used. Returns a new window to
    /// save *before* the oracle serves from the new physical time, if one is needed.
    pub fn update(&mut self, now_ms: u64) -> Option<u64> {
        let next = if now_ms > self.physical_ms + 1 {
            now_ms
        } else if self.logical > LOGICAL_MAX / 2 {
            self.physical_ms + 1
        } else {
            return None;
        };
        let save = (next + 1 >= self.window_ms).then(|| next + self.save_interval_ms);
        if let Some(w) = save {
            self.window_ms = w;
        }
        self.physical_ms = next;
        self.logical = 0;
        save
    }

    /// Hands out `count` consecutive timestamps; returns the last one (the client derives the
    /// others, as PD's clients do).
    pub fn allocate(&mut self, count: u64) -> Result<u64, TsoError> {
        if count == 0 || count > LOGICAL_MAX {
            return Err(TsoError::BadCount(count));
        }
        if self.logical + count >= LOGICAL_MAX {
            return Err(TsoError::LogicalOverflow {
                physical_ms: self.physical_ms,
            });
        }
        self.logical += count;
        Ok(compose(self.physical_ms, self.logical))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_only_grow_while_the_clock_jumps_around() {
        let (mut tso, mut saved) = Tso::start(1000, 0, 3000);
        let mut last = 0;
        // The wall clock goes forward, stalls, steps back by a minute, then forward again.
        for now in [1000, 1001, 1005, 1005, 61_005, 1_005, 1_006, 62_000, 62_000] {
            if let Some(w) = tso.update(now) {
                saved = w;
            }
            for _ in 0..3 {
                let ts = tso.allocate(7).unwrap();
                assert!(ts > last, "{ts} after {last}");
                assert!(
                    base::ts::physical_ms(ts) < saved,
                    "handed out beyond the saved window"
                );
                last = ts;
            }
        }
    }

    #[test]
    fn a_restart_starts_above_the_saved_window_even_with_a_clock_behind_it() {
        let (mut tso, saved) = Tso::start(10_000_000, 0, 3000);
        let before = tso.allocate(1).unwrap();
        // Restart with the wall clock an hour behind.
        let (mut again, _) = Tso::start(10_000_000 - 3_600_000, saved, 3000);
        assert!(again.allocate(1).unwrap() > before);
        assert!(again.physical_ms() > saved);
    }

    #[test]
    fn the_logical_space_is_bounded_and_the_tick_frees_it() {
        let (mut tso, _) = Tso::start(1, 0, 3000);
        tso.allocate(LOGICAL_MAX - 1).unwrap();
        assert!(matches!(
            tso.allocate(1),
            Err(TsoError::LogicalOverflow { .. })
        ));
        // The wall clock has not moved, but more than half the logical space is used: the
        // tick moves one millisecond on.
        tso.update(1);
        assert_eq!(tso.physical_ms(), 2);
        tso.allocate(1).unwrap();
        assert!(matches!(tso.allocate(0), Err(TsoError::BadCount(0))));
    }
}
