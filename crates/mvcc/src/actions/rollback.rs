//! Rollback (also Cleanup and the rollback half of ResolveLock): aborts txn `start_ts` on a
//! key. Removes its lock and value and writes a `Rollback` record at `start_ts`, which stays,
//! so a prewrite of the txn that arrives late finds it and fails. A txn that already
//! committed on the key cannot be rolled back (`Committed`).

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
        write_rollback(txn, key, start_ts);
        return Ok(());
    }
    match reader.txn_commit_record(key, start_ts)? {
        TxnCommitRecord::Committed { commit_ts, .. } => Err(MvccError::Committed {
            key: key.to_vec(),
            start_ts,
            commit_ts,
        }),
        TxnCommitRecord::RolledBack => Ok(()),
        // Never prewritten here (yet): leave the record that stops a late prewrite.
        TxnCommitRecord::None => {
            write_rollback(txn, key, start_ts);
            Ok(())
        }
    }
}

fn write_rollback(txn: &mut MvccTxn, key: &[u8], start_ts: u64) {
    txn.put_write(
        key,
        start_ts,
        &Write {
            write_type: WriteType::Rollback,
            start_ts,
            short_value: None,
        },
    );
}
