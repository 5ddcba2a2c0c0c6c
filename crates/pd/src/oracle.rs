//! The timestamp oracle of a running PD member: the pure [`Tso`] of the member's current
//! leadership, its window saved through Raft, and the tick that moves physical time on
//! (`tso-update-physical-interval`).
//!
//! Only the leader serves, and only under its lease ([`Shared::lease_term`]). When a member
//! finds itself leading a new term, its first tick starts a new [`Tso`] above the window in
//! the replicated state (everything earlier leaders saved has applied by then) and saves the
//! new window through Raft before it serves: a timestamp never goes back across leaders,
//! restarts or clock steps. A tick that needs a new window works on a copy and serves from
//! it only after the window committed; a failed save leaves the oracle in the old window.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::member::{ProposeError, Shared};
use crate::state::{Command, Outcome};
use crate::tso::{Tso, TsoError};

pub fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// How often a leader that does not serve yet ticks.
pub const STARTING_TICK: Duration = Duration::from_millis(2);

pub struct Oracle {
    /// The oracle of the term it was started in.
    tso: Mutex<Option<(u64, Tso)>>,
    shared: Arc<Shared>,
    save_interval_ms: u64,
}

impl Oracle {
    pub fn new(shared: Arc<Shared>, save_interval: Duration) -> Arc<Oracle> {
        Arc::new(Oracle {
            tso: Mutex::new(None),
            shared,
            save_interval_ms: save_interval.as_millis() as u64,
        })
    }

    /// One tick of the update loop; `save` proposes a window and waits for it to apply.
    pub fn tick(
        &self,
        now_ms: u64,
        now: Instant,
        save: &dyn Fn(Command) -> Result<Outcome, ProposeError>,
    ) -> Result<(), ProposeError> {
        let Some(term) = self.shared.lease_term(now) else {
            *self.tso.lock().expect("tso lock poisoned") = None;
            return Ok(());
        };
        let current = self.tso.lock().expect("tso lock poisoned").clone();
        let (next, window) = match current {
            Some((t, serving)) if t == term => {
                let mut next = serving.clone();
                let window = next.update(now_ms);
                if next.physical_ms() == serving.physical_ms() {
                    return Ok(());
                }
                (next, window)
            }
            _ => {
                let saved = self.shared.read(|s| s.tso_window_ms);
                let (tso, window) = Tso::start(now_ms, saved, self.save_interval_ms);
                (tso, Some(window))
            }
        };
        if let Some(window_ms) = window {
            save(Command::SaveTsoWindow { window_ms })?;
        }
        // Allocations meanwhile only raised the logical part of an earlier millisecond.
        let leading = self.shared.lease_term(Instant::now()) == Some(term);
        *self.tso.lock().expect("tso lock poisoned") = leading.then_some((term, next));
        Ok(())
    }

    /// Hands out `count` consecutive timestamps (returns the last), while this member leads
    /// under its lease and its oracle has started.
    pub fn allocate(&self, count: u64) -> Result<u64, TsoError> {
        let mut tso = self.tso.lock().expect("tso lock poisoned");
        // Checked with the lock held: a lease that ran out meanwhile is not honoured.
        let term = self.shared.lease_term(Instant::now());
        match &mut *tso {
            Some((t, tso)) if Some(*t) == term => tso.allocate(count),
            _ => Err(TsoError::NotServing),
        }
    }

    /// Whether the oracle of the current lease has started.
    pub fn is_serving(&self) -> bool {
        let term = self.shared.lease_term(Instant::now());
        matches!(&*self.tso.lock().expect("tso lock poisoned"), Some((t, _)) if Some(*t) == term)
    }

    /// Runs the tick every `interval` on a thread named `tso-tick` until `stop` is dropped.
    pub fn spawn_ticker(
        self: &Arc<Self>,
        interval: Duration,
        save: Box<dyn Fn(Command) -> Result<Outcome, ProposeError> + Send>,
        stop: std::sync::mpsc::Receiver<()>,
    ) -> std::thread::JoinHandle<()> {
        let oracle = self.clone();
        std::thread::Builder::new()
            .name("tso-tick".into())
            .spawn(move || {
                // A member that leads but does not serve yet (a new leader saving its first
                // window) ticks again soon rather than a whole interval later.
                let wait = |o: &Oracle| {
                    let status = o.shared.status();
                    let starting = status.leader == status.id && !o.is_serving();
                    if starting {
                        STARTING_TICK.min(interval)
                    } else {
                        interval
                    }
                };
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stop.recv_timeout(wait(&oracle))
                {
                    if let Err(e) = oracle.tick(wall_clock_ms(), Instant::now(), &*save) {
                        tracing::warn!("TSO window not saved, serving inside the old one: {e}");
                    }
                }
            })
            .expect("the OS starts the tick thread")
    }
}
