//! What an MVCC action or read can report. Each names the key it is about.

use engine::hex;

use crate::record::{Lock, LockType};

/// A lock in a reader's or writer's way, as the client needs it to resolve it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockInfo {
    pub key: Vec<u8>,
    pub primary: Vec<u8>,
    pub start_ts: u64,
    pub ttl_ms: u64,
    pub lock_type: LockType,
    pub min_commit_ts: u64,
}

impl LockInfo {
    pub fn new(key: &[u8], lock: &Lock) -> LockInfo {
        LockInfo {
            key: key.to_vec(),
            primary: lock.primary.clone(),
            start_ts: lock.start_ts,
            ttl_ms: lock.ttl_ms,
            lock_type: lock.lock_type,
            min_commit_ts: lock.min_commit_ts,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MvccError {
    #[error("key {} is locked by txn {} (primary {})", hex(&.0.key), .0.start_ts, hex(&.0.primary))]
    KeyIsLocked(LockInfo),
    #[error(
        "write conflict on key {}: txn {start_ts} found a commit at {conflict_commit_ts} by txn {conflict_start_ts}",
        hex(key)
    )]
    WriteConflict {
        key: Vec<u8>,
        start_ts: u64,
        conflict_start_ts: u64,
        conflict_commit_ts: u64,
    },
    /// An insert's key already has a committed value.
    #[error("key {} already exists", hex(key))]
    AlreadyExist { key: Vec<u8> },
    #[error("txn {start_ts} was rolled back on key {}", hex(key))]
    AlreadyRolledBack { key: Vec<u8>, start_ts: u64 },
    #[error(
        "txn {start_ts} has no lock on key {} to commit (rolled back or never prewritten)",
        hex(key)
    )]
    TxnLockNotFound { key: Vec<u8>, start_ts: u64 },
    #[error("txn {start_ts} has no pessimistic lock on key {}", hex(key))]
    PessimisticLockNotFound { key: Vec<u8>, start_ts: u64 },
    #[error(
        "txn {start_ts} is already committed at {commit_ts} on key {}",
        hex(key)
    )]
    Committed {
        key: Vec<u8>,
        start_ts: u64,
        commit_ts: u64,
    },
    #[error(
        "commit_ts {commit_ts} of txn {start_ts} is below the lock's min_commit_ts {min_commit_ts} on key {}",
        hex(key)
    )]
    CommitTsExpired {
        key: Vec<u8>,
        start_ts: u64,
        commit_ts: u64,
        min_commit_ts: u64,
    },
    #[error(
        "txn {start_ts} has neither a lock nor a record on primary {}",
        hex(primary)
    )]
    TxnNotFound { primary: Vec<u8>, start_ts: u64 },
    #[error(
        "lock of txn {start_ts} on key {} is a {actual:?} lock, expected {expected}",
        hex(key)
    )]
    LockTypeNotMatch {
        key: Vec<u8>,
        start_ts: u64,
        actual: LockType,
        expected: &'static str,
    },
    #[error(transparent)]
    Engine(#[from] engine::Error),
}

pub type Result<T> = std::result::Result<T, MvccError>;
