//! Commit: the second phase. Turns txn `start_ts`'s lock on a key into a write record at
//! `commit_ts`. The primary key's commit is the txn's commit point.
//!
//! Idempotent: if the lock is gone because the txn already committed, commit succeeds again;
//! if it is gone because the txn was rolled back (or never prewritten), it fails with
//! `TxnLockNotFound` and the client must treat the txn as aborted.
//!
//! [`commit_one_pc`] commits a lock the same command's prewrite decided on before it is ever
//! written: one-phase commit, for a txn whose keys all lie in one request.

use engine::Snapshot;

use crate::error::{MvccError, Result};
use crate::reader::{MvccReader, TxnCommitRecord};
use crate::record::{Lock, LockType, Write, WriteType};
use crate::txn::MvccTxn;

pub fn commit<S: Snapshot>(
    txn: &mut MvccTxn,
    reader: &MvccReader<S>,
    key: &[u8],
    start_ts: u64,
    commit_ts: u64,
) -> Result<()> {
    match reader.load_lock(key)? {
        Some(lock) if lock.start_ts == start_ts => {
            let Some(write_type) = WriteType::from_lock(lock.lock_type) else {
                return Err(MvccError::LockTypeNotMatch {
                    key: key.to_vec(),
                    start_ts,
                    actual: LockType::Pessimistic,
                    expected: "a prewritten lock",
                });
            };
            if commit_ts < lock.min_commit_ts {
                return Err(MvccError::CommitTsExpired {
                    key: key.to_vec(),
                    start_ts,
                    commit_ts,
                    min_commit_ts: lock.min_commit_ts,
                });
            }
            let write = Write {
                write_type,
                start_ts,
                short_value: lock.short_value,
                overlapped_rollback: false,
            };
            txn.commit_write(key, commit_ts, write);
            txn.unlock(key);
            Ok(())
        }
        _ => match reader.txn_commit_record(key, start_ts)? {
            TxnCommitRecord::Committed { .. } => Ok(()),
            TxnCommitRecord::RolledBack | TxnCommitRecord::None => {
                Err(MvccError::TxnLockNotFound {
                    key: key.to_vec(),
                    start_ts,
                })
            }
        },
    }
}

/// One-phase commit of `key`: the write record `lock` would have become at `commit_ts`,
/// written in its place (`over_pessimistic`: the txn's pessimistic lock on the key goes). A
/// one-phase commit ts is not PD's: the txn that started at it may have left its rollback
/// record there, which the commit record then carries (`overlapped_rollback`), unless the
/// prewrite found no write record at or above the txn's start ts (`no_write_since_start`).
pub fn commit_one_pc<S: Snapshot>(
    txn: &mut MvccTxn,
    reader: &MvccReader<S>,
    key: &[u8],
    lock: Lock,
    over_pessimistic: bool,
    no_write_since_start: bool,
    commit_ts: u64,
) -> Result<()> {
    let Some(write_type) = WriteType::from_lock(lock.lock_type) else {
        return Err(MvccError::LockTypeNotMatch {
            key: key.to_vec(),
            start_ts: lock.start_ts,
            actual: lock.lock_type,
            expected: "a prewritten lock",
        });
    };
    let at_commit_ts = match no_write_since_start {
        true => None,
        false => reader.write_at(key, commit_ts)?,
    };
    let overlapped_rollback = match at_commit_ts {
        None => false,
        Some(w) if w.write_type == WriteType::Rollback => true,
        // Another commit at this very ts: not ours to replace.
        Some(w) => {
            return Err(MvccError::WriteConflict {
                key: key.to_vec(),
                start_ts: lock.start_ts,
                conflict_start_ts: w.start_ts,
                conflict_commit_ts: commit_ts,
            });
        }
    };
    let write = Write {
        write_type,
        start_ts: lock.start_ts,
        short_value: lock.short_value,
        overlapped_rollback,
    };
    txn.commit_write(key, commit_ts, write);
    if over_pessimistic {
        txn.unlock(key);
    }
    Ok(())
}
