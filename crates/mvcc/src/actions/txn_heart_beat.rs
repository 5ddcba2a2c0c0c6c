//! TxnHeartBeat: a long txn keeps its primary lock alive by raising its TTL, so readers'
//! CheckTxnStatus does not roll it back while it is still working.

use engine::Snapshot;

use crate::error::{MvccError, Result};
use crate::reader::MvccReader;
use crate::record::Lock;
use crate::txn::MvccTxn;

/// Raises the TTL of txn `start_ts`'s lock on `primary` to `advise_ttl_ms` (never lowers it);
/// returns the TTL in force.
pub fn txn_heart_beat<S: Snapshot>(
    txn: &mut MvccTxn,
    reader: &MvccReader<S>,
    primary: &[u8],
    start_ts: u64,
    advise_ttl_ms: u64,
) -> Result<u64> {
    match reader.load_lock(primary)? {
        Some(lock) if lock.start_ts == start_ts => {
            if advise_ttl_ms > lock.ttl_ms {
                txn.put_lock(
                    primary,
                    &Lock {
                        ttl_ms: advise_ttl_ms,
                        ..lock
                    },
                );
                return Ok(advise_ttl_ms);
            }
            Ok(lock.ttl_ms)
        }
        _ => Err(MvccError::TxnNotFound {
            primary: primary.to_vec(),
            start_ts,
        }),
    }
}
