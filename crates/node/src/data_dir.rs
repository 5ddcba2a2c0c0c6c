//! The data directory of a role process: created if missing, checked writable, and locked.
//!
//! The lock is an exclusive `flock` on `<dir>/LOCK`, held for the life of the process, so a
//! second process pointed at the same directory stops with a clear message instead of
//! corrupting the first one's files. The kernel drops the lock when the process dies, even
//! by SIGKILL, so a crash never leaves a stale lock. The holder's pid is written into the
//! file for the message only.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::error::NodeError;

/// Replaces `path` with `bytes`: a temp file, fsync, rename, fsync of the directory, so a
/// crash leaves the old content or the new, never a torn file.
pub fn save_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

pub struct DataDir {
    path: PathBuf,
    /// Keeps the flock; closing it releases the lock.
    _lock: File,
}

impl DataDir {
    pub fn open(path: &Path) -> Result<DataDir, NodeError> {
        let shown = path.display().to_string();
        let fail = |reason: String| NodeError::DataDir {
            path: shown.clone(),
            reason,
        };
        if path.exists() && !path.is_dir() {
            return Err(fail("exists and is not a directory".into()));
        }
        std::fs::create_dir_all(path).map_err(|e| fail(format!("cannot create: {e}")))?;
        let lock_path = path.join("LOCK");
        let mut lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| fail(format!("cannot write in it: {e}")))?;
        // SAFETY: flock on a file descriptor we own.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut pid = String::new();
            let _ = lock.read_to_string(&mut pid);
            let holder = match pid.trim() {
                "" => String::new(),
                pid => format!(" (pid {pid})"),
            };
            return Err(NodeError::DataDirLocked {
                path: shown,
                holder,
            });
        }
        lock.set_len(0)
            .and_then(|_| lock.rewind())
            .and_then(|_| writeln!(lock, "{}", std::process::id()))
            .and_then(|_| lock.sync_all())
            .map_err(|e| fail(format!("cannot write in it: {e}")))?;
        Ok(DataDir {
            path: path.to_path_buf(),
            _lock: lock,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_open_of_a_locked_dir_names_the_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("kv");
        let first = DataDir::open(&dir).unwrap();
        let err = DataDir::open(&dir)
            .err()
            .expect("second open must fail")
            .to_string();
        assert_eq!(
            err,
            format!(
                "data dir {} is in use by another process (pid {})",
                dir.display(),
                std::process::id()
            )
        );
        drop(first);
        DataDir::open(&dir).expect("free again once the first is closed");
    }

    #[test]
    fn a_file_in_the_way_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let err = DataDir::open(&file).err().unwrap().to_string();
        assert!(err.ends_with("exists and is not a directory"), "{err}");
    }
}
