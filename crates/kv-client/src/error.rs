//! What a kv-client call can fail with. `WriteConflict` and `Aborted` end a transaction (the
//! caller may retry it as a new one); `Undetermined` means the commit's outcome is unknown
//! (the primary's commit request was lost), exactly as TiDB reports it.

use proto::kv::KeyError;

#[derive(Debug, Clone, thiserror::Error)]
pub enum KvError {
    #[error(transparent)]
    Pd(#[from] pd_client::PdError),
    #[error("gave up after {slept_ms} ms of backoff ({what}): {last}")]
    BackoffExhausted {
        what: &'static str,
        slept_ms: u64,
        last: String,
    },
    #[error(
        "write conflict: txn {start_ts} on key {key:02x?}, txn {conflict_start_ts} committed it at {conflict_commit_ts}"
    )]
    WriteConflict {
        start_ts: u64,
        key: Vec<u8>,
        conflict_start_ts: u64,
        conflict_commit_ts: u64,
    },
    /// A prewrite met another txn's live lock on `key`, and the txn asked not to wait for it
    /// ([`crate::Transaction::set_rerun_on_clash`]).
    #[error("txn {start_ts}: key {key:02x?} is locked by a live txn")]
    KeyLocked { start_ts: u64, key: Vec<u8> },
    /// A key the txn inserted (presumed absent) has a committed value.
    #[error("txn {start_ts}: key {key:02x?} already exists")]
    AlreadyExist { start_ts: u64, key: Vec<u8> },
    /// Waiting for `lock_ts`'s lock would have closed a cycle of waiting txns.
    #[error("deadlock: txn {start_ts} would wait for txn {lock_ts} on key {key:02x?}")]
    Deadlock {
        start_ts: u64,
        lock_ts: u64,
        key: Vec<u8>,
    },
    #[error("transaction {start_ts} aborted: {reason}")]
    Aborted { start_ts: u64, reason: String },
    #[error("transaction {start_ts}: the commit's outcome is unknown: {reason}")]
    Undetermined { start_ts: u64, reason: String },
    /// A pushed-down plan failed on a kv node; `code` is MySQL's.
    #[error("coprocessor: {message} (error {code})")]
    Coprocessor { code: u16, message: String },
    /// The txn's snapshot is older than the GC safe point: versions it would read may be gone.
    #[error("transaction {start_ts} started before the GC safe point {safe_point}")]
    GcTooEarly { start_ts: u64, safe_point: u64 },
    #[error("kv node error: {0}")]
    Server(String),
    #[error("invalid request: {0}")]
    Invalid(String),
}

impl KvError {
    /// Whether running the transaction again from the start may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            KvError::WriteConflict { .. }
                | KvError::KeyLocked { .. }
                | KvError::Aborted { .. }
                | KvError::BackoffExhausted { .. }
        )
    }

    /// Whether another txn's write got in the way at commit: a write committed since the
    /// txn's start, a live lock it was told not to wait for, or a value where it inserted.
    /// Nothing of the txn stays.
    pub fn is_write_clash(&self) -> bool {
        matches!(
            self,
            KvError::WriteConflict { .. }
                | KvError::KeyLocked { .. }
                | KvError::AlreadyExist { .. }
        )
    }

    /// The error a `KeyError` means for txn `start_ts` (not for `locked`, which is resolved).
    pub fn from_key_error(start_ts: u64, e: &KeyError) -> KvError {
        if let Some(d) = &e.deadlock {
            return KvError::Deadlock {
                start_ts,
                lock_ts: d.lock_ts,
                key: d.lock_key.clone(),
            };
        }
        if let Some(a) = &e.already_exist {
            return KvError::AlreadyExist {
                start_ts,
                key: a.key.clone(),
            };
        }
        if let Some(c) = &e.conflict {
            return KvError::WriteConflict {
                start_ts,
                key: c.key.clone(),
                conflict_start_ts: c.conflict_ts,
                conflict_commit_ts: c.conflict_commit_ts,
            };
        }
        let reason = if !e.abort.is_empty() {
            e.abort.clone()
        } else if !e.retryable.is_empty() {
            e.retryable.clone()
        } else {
            format!("{e:?}")
        };
        KvError::Aborted { start_ts, reason }
    }
}

pub type Result<T> = std::result::Result<T, KvError>;
