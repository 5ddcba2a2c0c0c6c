//! A number PD must not forget (the TSO window, the GC safe point) in one small file replaced
//! atomically (write a temp file, fsync it, rename it over the old one, fsync the directory),
//! so a crash leaves either the old value or the new one, never a torn file. A file that does
//! not parse is an error naming it, not a reason to start from zero (for the TSO window that
//! could hand out old timestamps again).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum WindowError {
    #[error("cannot read {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("cannot save {path}: {reason}")]
    Write { path: PathBuf, reason: String },
}

pub struct WindowFile {
    path: PathBuf,
}

const FILE: &str = "tso-window";

impl WindowFile {
    /// The TSO window's file in `data_dir`.
    pub fn new(data_dir: &Path) -> WindowFile {
        WindowFile::named(data_dir, FILE)
    }

    /// Another durable number in `data_dir`, under `name`.
    pub fn named(data_dir: &Path, name: &str) -> WindowFile {
        WindowFile {
            path: data_dir.join(name),
        }
    }

    /// The saved window in ms, or 0 when none was ever saved.
    pub fn load(&self) -> Result<u64, WindowError> {
        let err = |reason: String| WindowError::Read {
            path: self.path.clone(),
            reason,
        };
        match std::fs::read_to_string(&self.path) {
            Ok(text) => text
                .trim()
                .parse()
                .map_err(|_| err(format!("{:?} is not a millisecond count", text.trim()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(err(e.to_string())),
        }
    }

    pub fn save(&self, window_ms: u64) -> Result<(), WindowError> {
        let err = |e: std::io::Error| WindowError::Write {
            path: self.path.clone(),
            reason: e.to_string(),
        };
        let tmp = self.path.with_extension("tmp");
        let mut f = File::create(&tmp).map_err(err)?;
        f.write_all(format!("{window_ms}\n").as_bytes())
            .map_err(err)?;
        f.sync_all().map_err(err)?;
        std::fs::rename(&tmp, &self.path).map_err(err)?;
        if let Some(dir) = self.path.parent() {
            File::open(dir).and_then(|d| d.sync_all()).map_err(err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_replace_the_window_and_garbage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let w = WindowFile::new(dir.path());
        assert_eq!(w.load().unwrap(), 0);
        w.save(1234).unwrap();
        w.save(5678).unwrap();
        assert_eq!(w.load().unwrap(), 5678);
        assert!(!dir.path().join("tso-window.tmp").exists());
        std::fs::write(dir.path().join(FILE), "garbage").unwrap();
        let e = w.load().unwrap_err().to_string();
        assert!(
            e.contains("tso-window") && e.contains("not a millisecond count"),
            "{e}"
        );
    }
}
