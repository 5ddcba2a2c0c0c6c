//! Prewrite: the first phase of two-phase commit. Locks a key for txn `start_ts` with the
//! value it will commit, after checking that nothing newer was committed (optimistic) or that
//! the txn holds the key's pessimistic lock (pessimistic, which it then upgrades); a key a
//! pessimistic txn's other locks cover is not checked ([`KeyCheck`]).
//!
//! Idempotent: a repeated prewrite of the same txn finds its own lock (or its own commit) and
//! changes nothing. A rollback record of the txn makes it fail, so a prewrite that arrives
//! after the txn was rolled back can never succeed.

use engine::Snapshot;

use crate::error::{LockInfo, MvccError, Result};
use crate::reader::{MvccReader, TxnCommitRecord, WriteCursor};
use crate::record::{Lock, LockType, WriteType};
use crate::txn::MvccTxn;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    /// Lock the key without changing it.
    Lock(Vec<u8>),
    /// Put a key that has no value yet: the prewrite fails with `AlreadyExist` if it has one.
    Insert(Vec<u8>, Vec<u8>),
}

impl Mutation {
    pub fn key(&self) -> &[u8] {
        match self {
            Mutation::Put(k, _)
            | Mutation::Delete(k)
            | Mutation::Lock(k)
            | Mutation::Insert(k, _) => k,
        }
    }
}

/// What the txn tells every prewrite of its keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnProps {
    pub primary: Vec<u8>,
    pub start_ts: u64,
    pub ttl_ms: u64,
    /// 0 for an optimistic txn; the pessimistic txn's for_update_ts otherwise.
    pub for_update_ts: u64,
    pub txn_size: u64,
    pub min_commit_ts: u64,
}

/// What a prewrite makes sure of before it locks a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCheck {
    /// Nothing was committed since the txn's start ts: an optimistic txn's key, or one a
    /// pessimistic txn wrote without locking it.
    NoNewerWrite,
    /// The txn holds the key's pessimistic lock (taking it checked for newer commits).
    PessimisticLock,
    /// Nothing: the pessimistic txn's lock on another key rules out any conflict (TiDB's
    /// non-unique index entries, covered by their row's lock; TiKV skips the check too),
    /// except with a writer that never locks the row (an ADD INDEX backfill): a one-phase
    /// commit looks for such a commit first (`txn::command`).
    Covered,
}

/// What the prewrite of one key decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prewritten {
    /// The txn's own prewrite or commit of the key is already there (a retried request):
    /// nothing to write.
    Already,
    /// `lock` goes on the key (or, in a one-phase commit, becomes its write record);
    /// `over_pessimistic`: it takes the place of the txn's pessimistic lock;
    /// `no_write_since_start`: the key has no write record at or above the txn's start ts,
    /// so none at a one-phase commit ts above it either.
    Lock {
        lock: Lock,
        over_pessimistic: bool,
        no_write_since_start: bool,
    },
}

/// Prewrites one mutation, after the checks `check` asks for.
pub fn prewrite<S: Snapshot>(
    txn: &mut MvccTxn,
    reader: &MvccReader<S>,
    props: &TxnProps,
    mutation: Mutation,
    check: KeyCheck,
) -> Result<()> {
    let key = mutation.key().to_vec();
    let mut writes = reader.write_cursor();
    let prewritten = check_prewrite(txn, reader, &mut writes, props, mutation, check)?;
    if let Prewritten::Lock { lock, .. } = prewritten {
        txn.put_lock(&key, &lock);
    }
    Ok(())
}

/// The checks of [`prewrite`], and the lock it would write; a value too long for the lock
/// is already put in the default CF. `writes` reads the write records of `reader`'s
/// snapshot (one cursor for all the keys of a command).
pub fn check_prewrite<S: Snapshot>(
    txn: &mut MvccTxn,
    reader: &MvccReader<S>,
    writes: &mut WriteCursor<'_, S>,
    props: &TxnProps,
    mutation: Mutation,
    check: KeyCheck,
) -> Result<Prewritten> {
    let key = mutation.key().to_vec();
    let start_ts = props.start_ts;
    let mut over_pessimistic = false;
    let mut no_write_since_start = false;
    // A pessimistic lock's TTL (kept ahead by the txn's heartbeats) stays with the lock that
    // replaces it, as in TiKV (which keeps the larger min_commit_ts too): a prewrite with the
    // short optimistic TTL would let another txn roll this one back while its commit is
    // delayed.
    let (mut ttl_ms, mut min_commit_ts) = (props.ttl_ms, props.min_commit_ts);
    match reader.load_lock(&key)? {
        Some(lock) if lock.start_ts != start_ts => {
            return Err(MvccError::KeyIsLocked(LockInfo::new(&key, &lock)));
        }
        // Our own prewrite already happened: a retried request.
        Some(lock) if lock.lock_type != LockType::Pessimistic => return Ok(Prewritten::Already),
        // Our pessimistic lock: the conflict checks were done when it was taken.
        Some(lock) => {
            over_pessimistic = true;
            ttl_ms = ttl_ms.max(lock.ttl_ms);
            min_commit_ts = min_commit_ts.max(lock.min_commit_ts);
        }
        // No conflict check here (the pessimistic lock did it, or the key is covered): only a
        // retried or too-late prewrite is caught, and a pessimistic lock that is gone.
        None if check != KeyCheck::NoNewerWrite => {
            let since = writes.writes_since(&key, start_ts)?;
            no_write_since_start = since.is_empty();
            match TxnCommitRecord::among(start_ts, since) {
                TxnCommitRecord::Committed { .. } => return Ok(Prewritten::Already),
                TxnCommitRecord::RolledBack => {
                    return Err(MvccError::AlreadyRolledBack { key, start_ts });
                }
                TxnCommitRecord::None if check == KeyCheck::PessimisticLock => {
                    return Err(MvccError::PessimisticLockNotFound { key, start_ts });
                }
                TxnCommitRecord::None => {}
            }
        }
        None => {
            let since = writes.writes_since(&key, start_ts)?;
            no_write_since_start = since.is_empty();
            for (commit_ts, write) in since {
                match TxnCommitRecord::of(start_ts, commit_ts, &write) {
                    Some(TxnCommitRecord::RolledBack) => {
                        return Err(MvccError::AlreadyRolledBack { key, start_ts });
                    }
                    Some(_) => return Ok(Prewritten::Already),
                    None => {}
                }
                // A commit at exactly the start ts (a one-phase commit's ts need not be PD's)
                // was visible to the txn's reads: no conflict.
                if commit_ts > start_ts && write.write_type != WriteType::Rollback {
                    return Err(MvccError::WriteConflict {
                        key,
                        start_ts,
                        conflict_start_ts: write.start_ts,
                        conflict_commit_ts: commit_ts,
                    });
                }
            }
        }
    }
    // An insert's key may hold no value. A newer commit than the txn's start was a conflict
    // above, unless the txn's pessimistic lock checked for it (and saw this value, if any).
    if let Mutation::Insert(..) = mutation
        && reader
            .load_latest(&key)?
            .is_some_and(|latest| latest.write.write_type == WriteType::Put)
    {
        return Err(MvccError::AlreadyExist { key });
    }
    let (lock_type, value) = match mutation {
        Mutation::Put(_, v) | Mutation::Insert(_, v) => (LockType::Put, Some(v)),
        Mutation::Delete(_) => (LockType::Delete, None),
        Mutation::Lock(_) => (LockType::Lock, None),
    };
    let short_value = value.and_then(|v| super::place_value(txn, &key, start_ts, v));
    let lock = Lock {
        lock_type,
        primary: props.primary.clone(),
        start_ts,
        ttl_ms,
        for_update_ts: props.for_update_ts,
        min_commit_ts: min_commit_ts.max(start_ts.saturating_add(1)),
        txn_size: props.txn_size,
        short_value,
    };
    Ok(Prewritten::Lock {
        lock,
        over_pessimistic,
        no_write_since_start,
    })
}
