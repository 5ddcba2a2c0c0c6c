//! One file per Percolator action (KNOBS.md §6.2). Each reads through an [`MvccReader`] on
//! one snapshot, records its writes in an [`MvccTxn`], and returns what the client needs.
//! The caller holds the keys' latches from the read to the write, so nothing changes between.
//!
//! [`MvccReader`]: crate::MvccReader
//! [`MvccTxn`]: crate::MvccTxn

pub mod acquire_pessimistic_lock;
pub mod check_txn_status;
pub mod commit;
pub mod prewrite;
pub mod rollback;
pub mod txn_heart_beat;

use crate::record::{Lock, LockType, SHORT_VALUE_MAX_BYTES};
use crate::txn::MvccTxn;

/// Removes txn `lock`'s lock on `key` and its value in the default CF, if any.
pub(crate) fn unlock_and_drop_value(txn: &mut MvccTxn, key: &[u8], lock: &Lock) {
    if lock.lock_type == LockType::Put && lock.short_value.is_none() {
        txn.delete_value(key, lock.start_ts);
    }
    txn.unlock(key);
}

/// Splits a value into the inline part of a lock and what goes to the default CF.
pub(crate) fn place_value(
    txn: &mut MvccTxn,
    key: &[u8],
    start_ts: u64,
    value: Vec<u8>,
) -> Option<Vec<u8>> {
    if value.len() <= SHORT_VALUE_MAX_BYTES {
        Some(value)
    } else {
        txn.put_value(key, start_ts, &value);
        None
    }
}
