//! AcquirePessimisticLock: a pessimistic txn locks a key when its statement reads it for
//! writing, before it knows the value. Fails with `WriteConflict` if someone committed the
//! key after the statement's `for_update_ts` (the SQL layer retries the statement with a
//! fresh one), and with `KeyIsLocked` if another txn holds the key.

use engine::Snapshot;

use crate::error::{LockInfo, MvccError, Result};
use crate::reader::{MvccReader, TxnCommitRecord};
use crate::record::{Lock, LockType, Write, WriteType};
use crate::txn::MvccTxn;

pub fn acquire_pessimistic_lock<S: Snapshot>(
    txn: &mut MvccTxn,
    reader: &MvccReader<S>,
    key: &[u8],
    primary: &[u8],
    start_ts: u64,
    for_update_ts: u64,
    ttl_ms: u64,
) -> Result<()> {
    if let Some(lock) = reader.load_lock(key)? {
        if lock.start_ts != start_ts {
            return Err(MvccError::KeyIsLocked(LockInfo::new(key, &lock)));
        }
        if lock.lock_type == LockType::Pessimistic && for_update_ts > lock.for_update_ts {
            txn.put_lock(
                key,
                &Lock {
                    for_update_ts,
                    ..lock
                },
            );
        }
        // Ours already (pessimistic, or prewritten by a retried request): nothing to do.
        return Ok(());
    }
    // A record newer than `for_update_ts` is a conflict; below it, only this txn's own
    // rollback matters, and that sits at exactly `start_ts`. A first statement
    // (`for_update_ts` = `start_ts`) walks down to `start_ts`; a statement retried at a newer
    // `for_update_ts` walks only the records above it and looks up `start_ts` alone, never
    // what was committed since the txn began.
    let walk_from = if for_update_ts > start_ts {
        for_update_ts.saturating_add(1)
    } else {
        start_ts
    };
    for (commit_ts, write) in reader.writes_since(key, walk_from)? {
        check_own_record(key, start_ts, commit_ts, &write)?;
        if commit_ts > for_update_ts && write.write_type != WriteType::Rollback {
            return Err(MvccError::WriteConflict {
                key: key.to_vec(),
                start_ts,
                conflict_start_ts: write.start_ts,
                conflict_commit_ts: commit_ts,
            });
        }
    }
    if walk_from > start_ts
        && let Some(write) = reader.write_at(key, start_ts)?
    {
        check_own_record(key, start_ts, start_ts, &write)?;
    }
    txn.put_new_pessimistic_lock(
        key,
        &Lock {
            lock_type: LockType::Pessimistic,
            primary: primary.to_vec(),
            start_ts,
            ttl_ms,
            for_update_ts,
            min_commit_ts: 0,
            txn_size: 0,
            short_value: None,
        },
    );
    Ok(())
}

/// Refuses the lock if `write`, found at `commit_ts`, is this txn's own commit or rollback (a
/// late or retried request). A commit comes after every statement, so its ts is above any
/// `for_update_ts` of the txn; a rollback record sits at `start_ts`.
fn check_own_record(key: &[u8], start_ts: u64, commit_ts: u64, write: &Write) -> Result<()> {
    match TxnCommitRecord::of(start_ts, commit_ts, write) {
        Some(TxnCommitRecord::RolledBack) => Err(MvccError::AlreadyRolledBack {
            key: key.to_vec(),
            start_ts,
        }),
        Some(_) => Err(MvccError::Committed {
            key: key.to_vec(),
            start_ts,
            commit_ts,
        }),
        None => Ok(()),
    }
}
