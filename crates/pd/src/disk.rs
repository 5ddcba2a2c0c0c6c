//! Where a PD member keeps what it must not forget: the members' Raft log and hard state in
//! raft-engine (`<data-dir>/raft`), and a [`Checkpoint`] of the applied state in
//! `<data-dir>/pd-state.json`, replaced whole by fsynced rename.
//!
//! The order that keeps a restart correct: a checkpoint is saved before the log below it is
//! dropped, and a snapshot received from the leader is saved as the checkpoint before the
//! log write that clears the old log. On restart the member starts from the checkpoint and
//! raft-rs hands it the committed entries after it again.
//!
//! A data dir written before the members replicated their state (one `cluster.json`,
//! `tso-window` and `gc-safe-point` file each) is read once into the first checkpoint, so an
//! upgraded PD keeps its stores, regions, ids, and never hands out a timestamp below the
//! saved window.

use std::path::{Path, PathBuf};

use raft_log::{LogConfig, LogEngine, LogWrite};
use serde::{Deserialize, Serialize};

use crate::cluster::Cluster;
use crate::state::PdState;

/// The raft-engine group of the members' log (the engine holds no other group).
pub const GROUP: u64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    #[error(transparent)]
    Log(#[from] raft_log::Error),
    #[error("cannot read {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("cannot save {path}: {reason}")]
    Write { path: PathBuf, reason: String },
}

/// The applied state as of `applied_index`, with the membership then.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub applied_index: u64,
    pub applied_term: u64,
    pub voters: Vec<u64>,
    pub learners: Vec<u64>,
    pub state: PdState,
}

impl Checkpoint {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a checkpoint serialises")
    }

    pub fn decode(bytes: &[u8]) -> Result<Checkpoint, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("not a pd checkpoint: {e}"))
    }
}

/// What a member writes: its log and its checkpoints.
pub trait Disk: Send {
    fn log(&self) -> &LogEngine;
    fn write_log(&mut self, write: &mut LogWrite) -> Result<(), DiskError>;
    fn save_checkpoint(&mut self, checkpoint: &Checkpoint) -> Result<(), DiskError>;
}

pub struct MemberDisk {
    log: LogEngine,
    checkpoint: PathBuf,
}

impl MemberDisk {
    /// Opens the log in `<data_dir>/raft` and returns the saved checkpoint, if any.
    pub fn open(data_dir: &Path) -> Result<(MemberDisk, Option<Checkpoint>), DiskError> {
        let log = LogEngine::open(&LogConfig::new(data_dir.join("raft")))?;
        let disk = MemberDisk {
            log,
            checkpoint: data_dir.join("pd-state.json"),
        };
        let saved = match std::fs::read(&disk.checkpoint) {
            Ok(bytes) => Some(
                Checkpoint::decode(&bytes).map_err(|reason| DiskError::Read {
                    path: disk.checkpoint.clone(),
                    reason,
                })?,
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(DiskError::Read {
                    path: disk.checkpoint.clone(),
                    reason: e.to_string(),
                });
            }
        };
        Ok((disk, saved))
    }

    /// Whether the log holds nothing.
    pub fn log_is_empty(&self) -> bool {
        self.log.groups().is_empty()
    }
}

impl Disk for MemberDisk {
    fn log(&self) -> &LogEngine {
        &self.log
    }

    fn write_log(&mut self, write: &mut LogWrite) -> Result<(), DiskError> {
        self.log.write(write)?;
        Ok(())
    }

    fn save_checkpoint(&mut self, checkpoint: &Checkpoint) -> Result<(), DiskError> {
        save_atomically(&self.checkpoint, &checkpoint.encode())
    }
}

/// Replaces `path` with `bytes` by fsynced rename ([`node::data_dir::save_atomically`]).
pub fn save_atomically(path: &Path, bytes: &[u8]) -> Result<(), DiskError> {
    node::data_dir::save_atomically(path, bytes).map_err(|e| DiskError::Write {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// The state a data dir of a single, unreplicated PD held (empty when there is none).
pub fn legacy_state(data_dir: &Path) -> Result<PdState, DiskError> {
    let read = |name: &str| -> Result<Option<String>, DiskError> {
        let path = data_dir.join(name);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(DiskError::Read {
                path,
                reason: e.to_string(),
            }),
        }
    };
    let number = |name: &str| -> Result<u64, DiskError> {
        match read(name)? {
            None => Ok(0),
            Some(text) => text.trim().parse().map_err(|_| DiskError::Read {
                path: data_dir.join(name),
                reason: format!("{:?} is not a number", text.trim()),
            }),
        }
    };
    let cluster: Cluster = match read("cluster.json")? {
        None => Cluster::default(),
        Some(text) => serde_json::from_str(&text).map_err(|e| DiskError::Read {
            path: data_dir.join("cluster.json"),
            reason: format!("not a cluster state: {e}"),
        })?,
    };
    Ok(PdState {
        cluster,
        tso_window_ms: number("tso-window")?,
        gc_safe_point: number("gc-safe-point")?,
        ..PdState::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_is_replaced_whole_and_garbage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let (mut disk, saved) = MemberDisk::open(dir.path()).unwrap();
        assert!(saved.is_none() && disk.log_is_empty());
        let mut cp = Checkpoint {
            applied_index: 5,
            applied_term: 2,
            voters: vec![1, 2, 3],
            ..Checkpoint::default()
        };
        cp.state.tso_window_ms = 99;
        disk.save_checkpoint(&cp).unwrap();
        drop(disk);
        let (_, saved) = MemberDisk::open(dir.path()).unwrap();
        assert_eq!(saved, Some(cp));
        assert!(!dir.path().join("pd-state.tmp").exists());
        std::fs::write(dir.path().join("pd-state.json"), b"{oops").unwrap();
        let e = MemberDisk::open(dir.path()).err().unwrap().to_string();
        assert!(
            e.contains("pd-state.json") && e.contains("not a pd checkpoint"),
            "{e}"
        );
    }

    #[test]
    fn an_old_single_pd_data_dir_is_read_into_the_first_state() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(legacy_state(dir.path()).unwrap(), PdState::default());
        std::fs::write(dir.path().join("tso-window"), "1234\n").unwrap();
        std::fs::write(dir.path().join("gc-safe-point"), "77\n").unwrap();
        std::fs::write(
            dir.path().join("cluster.json"),
            serde_json::to_vec(&Cluster::default()).unwrap(),
        )
        .unwrap();
        let s = legacy_state(dir.path()).unwrap();
        assert_eq!((s.tso_window_ms, s.gc_safe_point), (1234, 77));
        std::fs::write(dir.path().join("tso-window"), "soon").unwrap();
        let e = legacy_state(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("tso-window") && e.contains("not a number"),
            "{e}"
        );
    }
}
