//! AcquirePessimisticLock: a pessimistic txn locks a key when its statement reads it for
//! writing, before it knows the value. Fails with `WriteConflict` if someone committed the
//! key after the statement's `for_update_ts` (the SQL layer retries the statement with a
//! fresh one), and with `KeyIsLocked` if another txn holds the key.

use engine::Snapshot;

use crate::error::{LockInfo, MvccError, Result};
use crate::reader::{MvccReader, TxnCommitRecord};
use crate::record::{Lock, LockType, WriteType};
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
    for (commit_ts, write) in reader.writes_since(key, start_ts)? {
        match TxnCommitRecord::of(start_ts, commit_ts, &write) {
            Some(TxnCommitRecord::RolledBack) => {
                return Err(MvccError::AlreadyRolledBack {
                    key: key.to_vec(),
                    start_ts,
                });
            }
            Some(_) => {
                return Err(MvccError::Committed {
                    key: key.to_vec(),
                    start_ts,
                    commit_ts,
                });
            }
            None => {}
        }
        if commit_ts > for_update_ts && write.write_type != WriteType::Rollback {
            return Err(MvccError::WriteConflict {
                key: key.to_vec(),
                start_ts,
                conflict_start_ts: write.start_ts,
                conflict_commit_ts: commit_ts,
            });
        }
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
