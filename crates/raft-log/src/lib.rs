//! `raft-log`: where Raft groups keep their logs and hard states: one raft-engine instance per
//! process, shared by every group of it (a kv node's regions, later the pd members' group).
//!
//! The Ready contract of raft-rs is written here once for every user:
//! - what a round of readies must persist goes into one [`LogWrite`], for all groups at
//!   once, and [`LogEngine::write`] makes it durable with one raft-engine write and (when any
//!   part needs it) one fdatasync: group commit across groups;
//! - the write may run on another thread (raftstore's store-io threads) while raft-rs goes on:
//!   [`GroupStorage::append`] shows its entries at once, and only after the write returns may
//!   a follower's messages leave and [`GroupStorage::persisted_to`] mark them durable;
//! - writes of one group reach raft-engine in the order they were made;
//! - raft-engine's own `sync()` writes an empty batch and returns early without an fsync, so
//!   durability always rides on the write that carries the data (`sync = true`).
//!
//! What the log does not know is kept by its user with the applied state: where the log
//! begins (the truncated index and term, moved by a replicated compaction or a snapshot) and
//! the membership as of the applied index. [`GroupStorage::open`] takes them as a
//! [`LogBase`].

pub mod logger;
mod storage;

use std::path::PathBuf;
use std::sync::Arc;

use raft::eraftpb::{Entry, HardState};
use raft_engine::{Command, LogBatch, MessageExt};

pub use raft_engine::RecoveryMode;
pub use storage::{GroupStorage, LogBase};

/// The key of a group's hard state among raft-engine's per-group key-values.
const HARD_STATE_KEY: &[u8] = b"hard_state";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// raft-engine failed: I/O, a full disk, or a file it cannot read.
    #[error("raft-engine: {0}")]
    Engine(#[from] raft_engine::Error),
    /// What raft-engine returned for a group is not what was written.
    #[error("raft log of group {group} is corrupt: {detail}")]
    Corrupt { group: u64, detail: String },
}

pub type Result<T> = std::result::Result<T, Error>;

/// The `raft-engine.*` knobs that raft-engine reads (KNOBS.md §1.3).
#[derive(Debug, Clone)]
pub struct LogConfig {
    pub dir: PathBuf,
    pub format_version: u64,
    pub recovery_mode: RecoveryMode,
    pub enable_log_recycle: bool,
    pub prefill_for_recycle: bool,
    pub purge_threshold_bytes: u64,
    pub target_file_size_bytes: u64,
    pub batch_compression_threshold_bytes: u64,
    pub memory_limit_bytes: Option<u64>,
}

impl LogConfig {
    /// raft-engine's and TiKV's defaults, in `dir`.
    pub fn new(dir: PathBuf) -> LogConfig {
        LogConfig {
            dir,
            format_version: 2,
            recovery_mode: RecoveryMode::TolerateTailCorruption,
            enable_log_recycle: true,
            prefill_for_recycle: false,
            purge_threshold_bytes: 10 << 30,
            target_file_size_bytes: 128 << 20,
            batch_compression_threshold_bytes: 8 << 10,
            memory_limit_bytes: None,
        }
    }

    fn to_engine_config(&self) -> raft_engine::Config {
        use raft_engine::ReadableSize;
        raft_engine::Config {
            dir: self.dir.to_string_lossy().into_owned(),
            format_version: if self.format_version >= 2 {
                raft_engine::Version::V2
            } else {
                raft_engine::Version::V1
            },
            recovery_mode: self.recovery_mode,
            enable_log_recycle: self.enable_log_recycle,
            prefill_for_recycle: self.prefill_for_recycle,
            purge_threshold: ReadableSize(self.purge_threshold_bytes),
            target_file_size: ReadableSize(self.target_file_size_bytes),
            batch_compression_threshold: ReadableSize(self.batch_compression_threshold_bytes),
            memory_limit: self.memory_limit_bytes.map(ReadableSize),
            ..raft_engine::Config::default()
        }
    }
}

/// How raft-engine finds an entry's index.
struct EntryExt;

impl MessageExt for EntryExt {
    type Entry = Entry;

    fn index(e: &Entry) -> u64 {
        e.index
    }
}

/// The process's raft-engine: cheap to clone, shared by all groups and threads.
#[derive(Clone)]
pub struct LogEngine {
    engine: Arc<raft_engine::Engine>,
}

impl LogEngine {
    /// Opens (or creates) the log in `config.dir`, recovering it as `recovery_mode` says: a
    /// torn tail is cut off under `TolerateTailCorruption`, refused under
    /// `AbsoluteConsistency`.
    pub fn open(config: &LogConfig) -> Result<LogEngine> {
        let engine = raft_engine::Engine::open(config.to_engine_config())?;
        Ok(LogEngine {
            engine: Arc::new(engine),
        })
    }

    /// Makes `write` durable (when it needs to be) and visible, then empties it for reuse.
    /// Returns the bytes written.
    pub fn write(&self, write: &mut LogWrite) -> Result<usize> {
        if write.batch.is_empty() {
            write.sync = false;
            return Ok(0);
        }
        let bytes = self.engine.write(&mut write.batch, write.sync)?;
        write.sync = false;
        Ok(bytes)
    }

    /// The groups that have anything in the log.
    pub fn groups(&self) -> Vec<u64> {
        self.engine.raft_groups()
    }

    /// The hard state last written for `group`, if any.
    pub fn hard_state(&self, group: u64) -> Result<Option<HardState>> {
        Ok(self
            .engine
            .get_message::<HardState>(group, HARD_STATE_KEY)?)
    }

    /// Drops `group`'s entries below `index` from the log's index (not synced: raft-engine
    /// writes the command without an fsync, so the caller must already hold the state these
    /// entries produced durably elsewhere). The files go when [`LogEngine::purge`] runs.
    pub fn compact_to(&self, group: u64, index: u64) -> u64 {
        self.engine.compact_to(group, index)
    }

    /// Removes log files nobody needs any more; returns groups whose old entries hold files
    /// back and should be compacted.
    pub fn purge(&self) -> Result<Vec<u64>> {
        Ok(self.engine.purge_expired_files()?)
    }

    /// The entries `[low, high)` of `group` as raft-engine holds them, at most `max_bytes`
    /// of them (and at least one).
    fn fetch(
        &self,
        group: u64,
        low: u64,
        high: u64,
        max_bytes: Option<usize>,
        out: &mut Vec<Entry>,
    ) -> Result<usize> {
        Ok(self
            .engine
            .fetch_entries_to::<EntryExt>(group, low, high, max_bytes, out)?)
    }

    fn last_index(&self, group: u64) -> Option<u64> {
        self.engine.last_index(group)
    }
}

/// What one round of readies persists, for any number of groups.
#[derive(Default)]
pub struct LogWrite {
    batch: LogBatch,
    sync: bool,
}

impl LogWrite {
    /// Appends `entries` to `group`'s log; entries at or below the log's last index replace
    /// the log from their index on (a follower overwriting a deposed leader's tail).
    pub fn append(&mut self, group: u64, entries: &[Entry]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        self.batch.add_entries::<EntryExt>(group, entries)?;
        self.sync = true;
        Ok(())
    }

    /// Saves `group`'s hard state. `must_sync` is raft-rs's `Ready::must_sync`: only a
    /// commit index that moved alone may ride without an fsync.
    pub fn put_hard_state(&mut self, group: u64, hs: &HardState, must_sync: bool) -> Result<()> {
        self.batch.put_message(group, HARD_STATE_KEY.to_vec(), hs)?;
        self.sync |= must_sync;
        Ok(())
    }

    /// Drops everything `group` has in the log (its peer received a snapshot, or it left).
    pub fn clear(&mut self, group: u64) {
        self.batch.add_command(group, Command::Clean);
        self.sync = true;
    }

    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// Moves everything `other` holds behind what this write holds (so many rounds' writes
    /// share one raft-engine write and fsync), leaving `other` empty.
    pub fn merge(&mut self, other: &mut LogWrite) -> Result<()> {
        self.batch.merge(&mut other.batch)?;
        self.sync |= std::mem::take(&mut other.sync);
        Ok(())
    }

    /// Whether the write will be fsynced.
    pub fn will_sync(&self) -> bool {
        self.sync
    }
}
