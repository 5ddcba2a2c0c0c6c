//! The timestamp oracle of a running PD: the pure [`Tso`] behind a mutex, its window on disk,
//! and the tick that moves physical time on (`tso-update-physical-interval`).
//!
//! A tick works on a copy of the state and commits it only after the new window it needs is
//! saved, so a failed save leaves the oracle serving inside the old, saved window.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::tso::{Tso, TsoError};
use crate::window::{WindowError, WindowFile};

pub struct Oracle {
    tso: Mutex<Tso>,
    window: WindowFile,
}

pub fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Oracle {
    /// Loads the saved window from `data_dir`, starts above it and saves the new window.
    pub fn open(
        data_dir: &Path,
        save_interval: Duration,
        now_ms: u64,
    ) -> Result<Arc<Oracle>, WindowError> {
        let window = WindowFile::new(data_dir);
        let (tso, new_window) =
            Tso::start(now_ms, window.load()?, save_interval.as_millis() as u64);
        window.save(new_window)?;
        Ok(Arc::new(Oracle {
            tso: Mutex::new(tso),
            window,
        }))
    }

    /// One tick of the update loop.
    pub fn tick(&self, now_ms: u64) -> Result<(), WindowError> {
        let mut tso = self.tso.lock().expect("tso lock poisoned");
        let mut next = tso.clone();
        if let Some(window) = next.update(now_ms) {
            self.window.save(window)?;
        }
        *tso = next;
        Ok(())
    }

    pub fn allocate(&self, count: u64) -> Result<u64, TsoError> {
        self.tso.lock().expect("tso lock poisoned").allocate(count)
    }

    /// Runs the tick every `interval` on a thread named `tso-tick` until `stop` is dropped.
    pub fn spawn_ticker(
        self: &Arc<Self>,
        interval: Duration,
        stop: std::sync::mpsc::Receiver<()>,
    ) -> std::thread::JoinHandle<()> {
        let oracle = self.clone();
        std::thread::Builder::new()
            .name("tso-tick".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stop.recv_timeout(interval)
                {
                    if let Err(e) = oracle.tick(wall_clock_ms()) {
                        tracing::error!("TSO window not saved, serving inside the old one: {e}");
                    }
                }
            })
            .expect("the OS starts the tick thread")
    }
}
