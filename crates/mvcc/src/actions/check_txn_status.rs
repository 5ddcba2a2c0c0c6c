//! CheckTxnStatus: what became of the txn whose primary lock is in a reader's way.
//!
//! On the primary key: if the txn's lock is there and its TTL (on TSO physical time) has
//! run out at `current_ts`, the txn is rolled back; if it is alive, its `min_commit_ts` is
//! pushed above `caller_start_ts` so the caller can read past it without waiting. With no
//! lock, the write records tell whether it committed or was rolled back; if there is no
//! trace at all and `rollback_if_not_exist`, a rollback record is left so the txn cannot
//! commit later.

use base::ts::physical_ms;
use engine::Snapshot;

use crate::error::{MvccError, Result};
use crate::reader::{MvccReader, TxnCommitRecord};
use crate::record::{Lock, LockType};
use crate::txn::MvccTxn;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnStatus {
    /// Alive: its lock, after any push of `min_commit_ts`.
    Locked(Lock),
    Committed {
        commit_ts: u64,
    },
    /// Rolled back now because its TTL ran out.
    TtlExpired,
    RolledBack,
    /// No trace of it; a rollback record was written.
    LockNotExistRollback,
}

pub fn check_txn_status<S: Snapshot>(
    txn: &mut MvccTxn,
    reader: &MvccReader<S>,
    primary: &[u8],
    lock_ts: u64,
    caller_start_ts: u64,
    current_ts: u64,
    rollback_if_not_exist: bool,
) -> Result<TxnStatus> {
    if let Some(lock) = reader.load_lock(primary)?
        && lock.start_ts == lock_ts
    {
        if physical_ms(lock.start_ts).saturating_add(lock.ttl_ms) < physical_ms(current_ts) {
            super::rollback::rollback(txn, reader, primary, lock_ts)?;
            return Ok(TxnStatus::TtlExpired);
        }
        if lock.lock_type != LockType::Pessimistic
            && caller_start_ts >= lock.min_commit_ts
            && caller_start_ts != u64::MAX
        {
            let pushed = Lock {
                min_commit_ts: caller_start_ts.saturating_add(1),
                ..lock
            };
            txn.put_lock(primary, &pushed);
            return Ok(TxnStatus::Locked(pushed));
        }
        return Ok(TxnStatus::Locked(lock));
    }
    match reader.txn_commit_record(primary, lock_ts)? {
        TxnCommitRecord::Committed { commit_ts, .. } => Ok(TxnStatus::Committed { commit_ts }),
        TxnCommitRecord::RolledBack => Ok(TxnStatus::RolledBack),
        TxnCommitRecord::None if rollback_if_not_exist => {
            super::rollback::rollback(txn, reader, primary, lock_ts)?;
            Ok(TxnStatus::LockNotExistRollback)
        }
        TxnCommitRecord::None => Err(MvccError::TxnNotFound {
            primary: primary.to_vec(),
            start_ts: lock_ts,
        }),
    }
}
