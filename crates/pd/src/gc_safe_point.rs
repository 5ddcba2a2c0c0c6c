//! The cluster's GC safe point: set by the SQL side's GC leader, read by every kv node's GC
//! worker. It only moves forward (a smaller update is ignored and the current value returned,
//! as PD does) and is saved durably before an update is acknowledged.

use std::path::Path;
use std::sync::Mutex;

use crate::window::{WindowError, WindowFile};

pub struct GcSafePoint {
    value: Mutex<u64>,
    file: WindowFile,
}

impl GcSafePoint {
    pub fn open(data_dir: &Path) -> Result<GcSafePoint, WindowError> {
        let file = WindowFile::named(data_dir, "gc-safe-point");
        Ok(GcSafePoint {
            value: Mutex::new(file.load()?),
            file,
        })
    }

    pub fn get(&self) -> u64 {
        *self.value.lock().expect("safe point lock poisoned")
    }

    /// Moves the safe point to `safe_point` if that is forward; returns the value in force.
    pub fn update(&self, safe_point: u64) -> Result<u64, WindowError> {
        let mut value = self.value.lock().expect("safe point lock poisoned");
        if safe_point > *value {
            self.file.save(safe_point)?;
            *value = safe_point;
        }
        Ok(*value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_only_forward_and_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let sp = GcSafePoint::open(dir.path()).unwrap();
        assert_eq!(sp.get(), 0);
        assert_eq!(sp.update(100).unwrap(), 100);
        assert_eq!(sp.update(50).unwrap(), 100);
        drop(sp);
        assert_eq!(GcSafePoint::open(dir.path()).unwrap().get(), 100);
    }
}
