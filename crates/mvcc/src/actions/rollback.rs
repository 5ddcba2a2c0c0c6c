//! Rollback (also Cleanup and the rollback half of ResolveLock): aborts txn `start_ts` on a
//! key. Removes its lock and value and writes a `Rollback` record at `start_ts`, which stays,
//! so a prewrite of the txn that arrives late finds it and fails. Where another txn's
//! one-phase commit holds that ts, its record is flagged instead (`overlapped_rollback`). A
//! txn that already committed on the key cannot be rolled back (`Committed`).

use engine::Snapshot;

use crate::error::{MvccError, Result};
use crate::reader::{MvccReader, TxnCommitRecord};
use crate::record::{Write, WriteType};
use crate::txn::MvccTxn;

pub fn rollback<S: Snapshot>(
    txn: &mut MvccTxn,
    reader: &MvccReader<S>,
    key: &[u8],
    start_ts: u64,
) -> Result<()> {
    if let Some(lock) = reader.load_lock(key)?
        && lock.start_ts == start_ts
    {
        super::unlock_and_drop_value(txn, key, &lock);
        return write_rollback(txn, reader, key, start_ts);
    }
    match reader.txn_commit_record(key, start_ts)? {
        TxnCommitRecord::Committed { commit_ts, .. } => Err(MvccError::Committed {
            key: key.to_vec(),
            start_ts,
            commit_ts,
        }),
        TxnCommitRecord::RolledBack => Ok(()),
        // Never prewritten here (yet): leave the record that stops a late prewrite.
        TxnCommitRecord::None => write_rollback(txn, reader, key, start_ts),
    }
}

/// Records that txn `start_ts` is rolled back on `key`: a `Rollback` record at `start_ts`,
/// or, where another txn's one-phase commit sits at that very ts, a flag on its record.
fn write_rollback<S: Snapshot>(
    txn: &mut MvccTxn,
    reader: &MvccReader<S>,
    key: &[u8],
    start_ts: u64,
) -> Result<()> {
    if let Some(write) = reader.write_at(key, start_ts)?
        && write.start_ts != start_ts
    {
        // A newer version already makes a late prewrite of the txn fail (a conflict, or its
        // pessimistic lock is gone), and GC may be removing this one: leave it alone.
        if !reader.has_write_after(key, start_ts)? {
            let flagged = Write {
                overlapped_rollback: true,
                ..write
            };
            txn.put_write(key, start_ts, &flagged);
        }
        return Ok(());
    }
    txn.put_write(
        key,
        start_ts,
        &Write {
            write_type: WriteType::Rollback,
            start_ts,
            short_value: None,
            overlapped_rollback: false,
        },
    );
    Ok(())
}
