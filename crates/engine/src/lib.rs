//! `engine`: what the storage layers above need from a key-value engine, as traits only.
//!
//! MVCC, the transaction scheduler and (later) raftstore program against [`KvEngine`]; the
//! RocksDB implementation lives in `engine-rocks`, the only crate that links RocksDB, so
//! everything above can be tested against any implementation and never pulls in C++.
//!
//! The model: five column families ([`Cf`]); reads through a consistent [`Snapshot`];
//! writes as an atomic [`WriteBatch`] that is durable (fsynced) when written with
//! `sync = true`; iterators over one CF within optional bounds. [`memory::MemoryEngine`]
//! implements the traits in memory for tests that need no RocksDB.

pub mod memory;

use std::fmt;

/// The column families of a kv node's data (KNOBS.md §6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cf {
    /// Large values, keyed by user key + start_ts.
    Default,
    /// One row per locked key.
    Lock,
    /// Commit and rollback records, keyed by user key + commit_ts.
    Write,
    /// Node and region metadata.
    Meta,
    /// The newest `Put` or `Delete` record of each key, keyed by user key: a read at or above
    /// its commit_ts need not walk the key's versions in [`Cf::Write`] (not in TiKV; see
    /// docs/architecture.md).
    Latest,
}

impl Cf {
    pub const ALL: [Cf; 5] = [Cf::Default, Cf::Lock, Cf::Write, Cf::Meta, Cf::Latest];

    pub fn name(self) -> &'static str {
        match self {
            Cf::Default => "default",
            Cf::Lock => "lock",
            Cf::Write => "write",
            Cf::Meta => "meta",
            Cf::Latest => "latest",
        }
    }
}

impl fmt::Display for Cf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The engine reported a failure (I/O, a full disk, a closed DB).
    #[error("storage engine: {0}")]
    Engine(String),
    /// Bytes read back are not what was written; names where.
    #[error("corrupted data in cf {cf} at key {}: {detail}", hex(key))]
    Corruption {
        cf: Cf,
        key: Vec<u8>,
        detail: String,
    },
    /// The engine cannot take writes now (write stall, flow control); retry later.
    #[error("storage engine is busy: {0}")]
    Busy(String),
    /// A replicated engine could not take the write here: this replica does not lead the
    /// data's region (any more). The write did not happen; retry where the leader is.
    #[error("not the leader: {0}")]
    NotLeader(String),
}

pub type Result<T> = std::result::Result<T, Error>;

/// Lower-case hex, for keys in messages.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bounds of an iterator: `lower` inclusive, `upper` exclusive; `None` = unbounded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IterOptions {
    pub lower: Option<Vec<u8>>,
    pub upper: Option<Vec<u8>>,
    /// Skip filling the block cache (large scans, GC).
    pub no_fill_cache: bool,
    /// Every entry the caller will read shares the seek key's user key (the key without its
    /// 8-byte timestamp), as when reading one key's versions: the engine may then skip files
    /// whose prefix bloom filter rules that key out. Only for [`Cf::Write`], the one CF whose
    /// keys all end in a timestamp.
    pub prefix_seek: bool,
}

/// A cursor over one column family. Positioning calls return whether it is now on an entry.
pub trait EngineIterator {
    fn seek(&mut self, key: &[u8]) -> Result<bool>;
    /// Positions at the last entry `<= key`.
    fn seek_for_prev(&mut self, key: &[u8]) -> Result<bool>;
    fn seek_to_first(&mut self) -> Result<bool>;
    fn seek_to_last(&mut self) -> Result<bool>;
    fn next(&mut self) -> Result<bool>;
    fn prev(&mut self) -> Result<bool>;
    fn valid(&self) -> bool;
    /// The current key; only while `valid()`.
    fn key(&self) -> &[u8];
    /// The current value; only while `valid()`.
    fn value(&self) -> &[u8];
}

/// Point reads.
pub trait Peekable {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>>;
}

/// Iterators.
pub trait Iterable {
    type Iter<'a>: EngineIterator
    where
        Self: 'a;

    fn iter(&self, cf: Cf, opts: IterOptions) -> Result<Self::Iter<'_>>;
}

/// A consistent, read-only view of the engine at one moment; cheap to clone and send.
pub trait Snapshot: Peekable + Iterable + Clone + Send + Sync + 'static {}

/// Writes collected to be applied atomically.
pub trait WriteBatch: Send {
    fn put(&mut self, cf: Cf, key: &[u8], value: &[u8]);
    fn delete(&mut self, cf: Cf, key: &[u8]);
    /// Deletes every key in `[start, end)`.
    fn delete_range(&mut self, cf: Cf, start: &[u8], end: &[u8]);
    /// Operations in the batch.
    fn count(&self) -> usize;
    /// Bytes the batch will write (keys and values plus framing).
    fn data_size(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.count() == 0
    }
    fn clear(&mut self);
}

/// The engine a kv node stores its data in.
pub trait KvEngine: Peekable + Iterable + Clone + Send + Sync + 'static {
    type Snapshot: Snapshot;
    type WriteBatch: WriteBatch;

    fn snapshot(&self) -> Self::Snapshot;
    fn write_batch(&self) -> Self::WriteBatch;
    /// Applies `batch` atomically. With `sync`, returns only once it is durable on disk.
    fn write(&self, batch: Self::WriteBatch, sync: bool) -> Result<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_cf_and_key() {
        let e = Error::Corruption {
            cf: Cf::Write,
            key: b"k\x01".to_vec(),
            detail: "short record".into(),
        };
        assert_eq!(
            e.to_string(),
            "corrupted data in cf write at key 6b01: short record"
        );
        assert_eq!(
            Cf::ALL.map(Cf::name),
            ["default", "lock", "write", "meta", "latest"]
        );
    }
}
