//! Filling the latest CF from the write CF: for a data dir an older Atoll wrote before the
//! latest CF existed, or a fill that a crash cut short. A marker in the meta CF, written with
//! the fill's last batch, says the CF is complete; without it the kv node fills the CF before
//! it serves. One pass over the write CF, whose versions of a key come newest first, so the
//! first `Put` or `Delete` of each key is its entry (entries a cut-short fill wrote are
//! written again, the same).

use codec::mvcc::{decode_key, split_versioned};
use engine::{Cf, EngineIterator, IterOptions, KvEngine, WriteBatch};

use crate::error::Result;
use crate::reader::corrupt_key;
use crate::record::{Latest, Write};

/// The meta CF key whose presence says the latest CF holds every key's entry.
const COMPLETE_KEY: &[u8] = b"mvcc/latest-cf-complete";

/// Entries written per batch.
const BATCH_ENTRIES: usize = 1024;

/// Fills the latest CF unless the marker says it is complete; returns how many keys got an
/// entry if it filled (a new, empty store fills nothing and gets the marker).
pub fn ensure_latest<E: KvEngine>(engine: &E) -> Result<Option<u64>> {
    if engine.get(Cf::Meta, COMPLETE_KEY)?.is_some() {
        return Ok(None);
    }
    rebuild_latest(engine).map(Some)
}

/// Writes every key's latest CF entry from its write records, then the marker; returns how
/// many keys got an entry.
pub fn rebuild_latest<E: KvEngine>(engine: &E) -> Result<u64> {
    let mut it = engine.iter(Cf::Write, IterOptions::default())?;
    let mut batch = engine.write_batch();
    let mut written = 0;
    // The encoded key whose entry is written (or that has none yet).
    let mut settled: Vec<u8> = Vec::new();
    let mut ok = it.seek_to_first()?;
    while ok {
        let (encoded, commit_ts) =
            split_versioned(it.key()).map_err(|e| corrupt_key(Cf::Write, it.key(), e))?;
        if encoded != settled.as_slice() {
            let key = decode_key(encoded).map_err(|e| corrupt_key(Cf::Write, encoded, e))?;
            let write = Write::decode(&key, it.value())?;
            if write.is_data() {
                let write = Write {
                    overlapped_rollback: false,
                    ..write
                };
                batch.put(Cf::Latest, encoded, &Latest { commit_ts, write }.encode());
                settled = encoded.to_vec();
                written += 1;
                if batch.count() == BATCH_ENTRIES {
                    engine.write(std::mem::replace(&mut batch, engine.write_batch()), false)?;
                }
            }
        }
        ok = it.next()?;
    }
    batch.put(Cf::Meta, COMPLETE_KEY, b"");
    engine.write(batch, true)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use engine::memory::MemoryEngine;
    use engine::{Iterable, Peekable};

    use super::*;
    use crate::record::WriteType;
    use crate::txn::MvccTxn;

    fn record(write_type: WriteType, start_ts: u64) -> Write {
        Write {
            write_type,
            start_ts,
            short_value: (write_type == WriteType::Put).then(|| start_ts.to_be_bytes().to_vec()),
            overlapped_rollback: false,
        }
    }

    fn latest_cf(e: &MemoryEngine) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut it = e.iter(Cf::Latest, IterOptions::default()).unwrap();
        let mut out = Vec::new();
        let mut ok = it.seek_to_first().unwrap();
        while ok {
            out.push((it.key().to_vec(), it.value().to_vec()));
            ok = it.next().unwrap();
        }
        out
    }

    /// Keys with puts, a delete, `Lock` and rollback records above their newest data record,
    /// and one with only a rollback: the rebuilt CF equals the one commits wrote. A store
    /// without the marker (new, or from before the CF) is filled once, then never again.
    #[test]
    fn a_fill_writes_what_the_commits_wrote_and_runs_until_it_completes() {
        let e = MemoryEngine::new();
        assert_eq!(
            ensure_latest(&e).unwrap(),
            Some(0),
            "a new store gets the marker"
        );
        assert_eq!(ensure_latest(&e).unwrap(), None);

        let e = MemoryEngine::new();
        let mut txn = MvccTxn::new();
        txn.commit_write(b"a", 11, record(WriteType::Put, 10));
        txn.commit_write(b"a", 21, record(WriteType::Put, 20));
        txn.commit_write(b"a", 31, record(WriteType::Lock, 30));
        txn.put_write(b"a", 40, &record(WriteType::Rollback, 40));
        txn.commit_write(b"b", 11, record(WriteType::Put, 10));
        txn.commit_write(b"b", 21, record(WriteType::Delete, 20));
        txn.put_write(b"c", 40, &record(WriteType::Rollback, 40));
        let mut wb = e.write_batch();
        txn.fill(&mut wb, None);
        e.write(wb, true).unwrap();
        let written = latest_cf(&e);
        assert_eq!(written.len(), 2);

        // As an older Atoll left it: no entries, no marker.
        let mut wb = e.write_batch();
        for (key, _) in &written {
            wb.delete(Cf::Latest, key);
        }
        e.write(wb, true).unwrap();
        assert_eq!(ensure_latest(&e).unwrap(), Some(2));
        assert_eq!(latest_cf(&e), written);
        let a = e
            .get(Cf::Latest, &codec::mvcc::encode_key(b"a"))
            .unwrap()
            .unwrap();
        assert_eq!(Latest::decode(b"a", &a).unwrap().commit_ts, 21);
        assert_eq!(ensure_latest(&e).unwrap(), None);
    }
}
