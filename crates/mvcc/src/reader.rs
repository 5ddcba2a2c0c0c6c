//! Reads at a timestamp through one snapshot (KNOBS.md §6.2, "Read").
//!
//! A read at `ts` first looks at the key's lock: a lock of another txn with
//! `start_ts <= ts` that could still commit below `ts` blocks it (`KeyIsLocked`, the client
//! resolves and retries); pessimistic and `Lock` locks never block readers. A read at
//! [`LATEST`](base::ts::LATEST) (TiDB's autocommit point get, which asks PD for no
//! timestamp) reads the newest committed version: a primary lock does not block it, since
//! the txn commits exactly when that lock gives way to a write record, so it has not
//! committed yet; a secondary lock does (its primary may have committed), and the client
//! retries at a timestamp from PD.
//!
//! Then it reads the key's entry in the latest CF, its newest `Put` or `Delete`: at or below
//! `ts` (nearly always), that record is the answer, with no walk over the key's versions;
//! no entry, no value. Only when the newest record is above `ts` does it walk the key's
//! write records from the newest at or below `ts`, skipping `Rollback` and `Lock` records.
//! A `Put` gives the value (inline or from the default CF at its start_ts), a `Delete` gives
//! none. A scan walks the latest CF the same way, one entry per key, so a key updated often
//! costs it no more than one written once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base::ts::LATEST;
use codec::mvcc::{append_ts, encode_key, split_versioned};
use engine::{Cf, EngineIterator, IterOptions, Snapshot};

use crate::error::{LockInfo, MvccError, Result};
use crate::pessimistic_locks::PessimisticLocks;
use crate::record::{Latest, Lock, LockType, Write, WriteType};

/// What the write records say about one txn on one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnCommitRecord {
    Committed { commit_ts: u64, write: Write },
    RolledBack,
    None,
}

impl TxnCommitRecord {
    /// What `write`, found at `commit_ts`, says about txn `start_ts`: its own commit or
    /// rollback record, or another txn's commit that also records its rollback (the
    /// overlapped rollback); `None` if neither.
    pub fn of(start_ts: u64, commit_ts: u64, write: &Write) -> Option<TxnCommitRecord> {
        if write.start_ts == start_ts {
            Some(match write.write_type {
                WriteType::Rollback => TxnCommitRecord::RolledBack,
                _ => TxnCommitRecord::Committed {
                    commit_ts,
                    write: write.clone(),
                },
            })
        } else if commit_ts == start_ts && write.overlapped_rollback {
            Some(TxnCommitRecord::RolledBack)
        } else {
            None
        }
    }

    /// What a key's write records since `start_ts` (newest first) say about txn `start_ts`.
    pub fn among(start_ts: u64, writes: Vec<(u64, Write)>) -> TxnCommitRecord {
        (writes.into_iter())
            .find_map(|(commit_ts, write)| TxnCommitRecord::of(start_ts, commit_ts, &write))
            .unwrap_or(TxnCommitRecord::None)
    }
}

/// One write-CF iterator that many keys' write records are read through: a command over many
/// keys (a prewrite of a batch) seeks it once per key, where opening an iterator for each key
/// cost more than the seek. Each seek still consults the CF's prefix bloom filters, as a
/// fresh iterator's would. Opened at the first read.
pub struct WriteCursor<'r, S: Snapshot> {
    reader: &'r MvccReader<S>,
    it: Option<S::Iter<'r>>,
}

impl<S: Snapshot> WriteCursor<'_, S> {
    /// Every write record of `key` with commit_ts at or above `ts`, newest first (as
    /// [`MvccReader::writes_since`]).
    pub fn writes_since(&mut self, key: &[u8], ts: u64) -> Result<Vec<(u64, Write)>> {
        let it = match &mut self.it {
            Some(it) => it,
            None => {
                let opts = IterOptions {
                    prefix_seek: true,
                    ..IterOptions::default()
                };
                self.it.insert(self.reader.snap.iter(Cf::Write, opts)?)
            }
        };
        walk_versions(it, key, &encode_key(key), u64::MAX, usize::MAX, |c| c >= ts)
    }
}

/// `key`'s write records (its encoded form `encoded`) that `it` holds, newest first, from the
/// newest at or below `from_ts`, at most `limit`, while `more(commit_ts)` says to go on: the
/// walk stops there, so a caller that needs the recent versions never reads (or steps onto)
/// the old ones.
fn walk_versions(
    it: &mut impl EngineIterator,
    key: &[u8],
    encoded: &[u8],
    from_ts: u64,
    limit: usize,
    mut more: impl FnMut(u64) -> bool,
) -> Result<Vec<(u64, Write)>> {
    let mut out = Vec::new();
    let mut ok = it.seek(&append_ts(encoded, from_ts))?;
    while ok {
        let (user_key, commit_ts) =
            split_versioned(it.key()).map_err(|e| corrupt_key(Cf::Write, key, e))?;
        if user_key != encoded || !more(commit_ts) {
            break;
        }
        out.push((commit_ts, Write::decode(key, it.value())?));
        if out.len() == limit {
            break;
        }
        ok = it.next()?;
    }
    Ok(out)
}

pub struct MvccReader<S> {
    snap: S,
    /// The lock table, probed before `snap` was taken, holds no lock that can block this
    /// reader's reads: `check_lock` and `check_locks_in` need not look at the lock CF.
    no_blocking_locks: bool,
    /// The pessimistic locks kept in memory, for commands that load a key's lock under its
    /// latch (`load_lock`); reads of values need not look, as such locks block no read.
    pessimistic: Option<Arc<PessimisticLocks>>,
    /// Key and value bytes, and keys, that `get` and scans returned (the region's read flow).
    read_bytes: AtomicU64,
    read_keys: AtomicU64,
}

/// Whether `lock` on `key` blocks a read at `ts` (its txn may still commit at or below `ts`).
fn blocks(key: &[u8], lock: &Lock, ts: u64, resolved: &[u64]) -> bool {
    !(ts == LATEST && lock.primary == key)
        && lock.start_ts <= ts
        && !matches!(lock.lock_type, LockType::Pessimistic | LockType::Lock)
        && lock.min_commit_ts <= ts
        && !resolved.contains(&lock.start_ts)
}

/// Iterator bounds for the user keys `[start, end)` (`end` empty = unbounded).
fn key_range(start: &[u8], end: &[u8]) -> IterOptions {
    IterOptions {
        lower: Some(encode_key(start)),
        upper: (!end.is_empty()).then(|| encode_key(end)),
        ..IterOptions::default()
    }
}

/// The smallest byte string greater than every string starting with `prefix`.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    // Encoded keys end in a marker below 0xFF, so the last byte can always grow.
    *end.last_mut().expect("encoded keys are never empty") += 1;
    end
}

pub(crate) fn corrupt_key(cf: Cf, key: &[u8], e: codec::CodecError) -> MvccError {
    MvccError::Engine(engine::Error::Corruption {
        cf,
        key: key.to_vec(),
        detail: e.to_string(),
    })
}

impl<S: Snapshot> MvccReader<S> {
    pub fn new(snap: S) -> MvccReader<S> {
        MvccReader {
            snap,
            no_blocking_locks: false,
            pessimistic: None,
            read_bytes: AtomicU64::new(0),
            read_keys: AtomicU64::new(0),
        }
    }

    /// A reader whose caller probed the [`LockTable`](crate::LockTable) for everything it
    /// will read before taking `snap`; `no_blocking_locks` is what the probe found.
    pub fn after_lock_probe(snap: S, no_blocking_locks: bool) -> MvccReader<S> {
        MvccReader {
            snap,
            no_blocking_locks,
            pessimistic: None,
            read_bytes: AtomicU64::new(0),
            read_keys: AtomicU64::new(0),
        }
    }

    /// Also reads the locks kept in `locks` (see `pessimistic_locks` for where a lock lives).
    pub fn with_pessimistic_locks(mut self, locks: Arc<PessimisticLocks>) -> MvccReader<S> {
        self.pessimistic = Some(locks);
        self
    }

    /// The key's lock, in memory or in the lock CF.
    pub fn load_lock(&self, key: &[u8]) -> Result<Option<Lock>> {
        match self.pessimistic.as_ref().and_then(|p| p.get(key)) {
            Some(lock) => Ok(Some(lock)),
            None => self.load_stored_lock(key),
        }
    }

    /// The key's lock in the lock CF.
    fn load_stored_lock(&self, key: &[u8]) -> Result<Option<Lock>> {
        match self.snap.get(Cf::Lock, &encode_key(key))? {
            Some(bytes) => Ok(Some(Lock::decode(key, &bytes)?)),
            None => Ok(None),
        }
    }

    /// The key's write records, newest first, from the newest at or below `from_ts`, at most
    /// `limit`, while `more(commit_ts)` says to go on (see [`walk_versions`]).
    fn walk_writes(
        &self,
        key: &[u8],
        from_ts: u64,
        limit: usize,
        more: impl FnMut(u64) -> bool,
    ) -> Result<Vec<(u64, Write)>> {
        let encoded = encode_key(key);
        let opts = IterOptions {
            lower: Some(append_ts(&encoded, from_ts)),
            upper: Some(prefix_end(&encoded)),
            prefix_seek: true,
            ..IterOptions::default()
        };
        let mut it = self.snap.iter(Cf::Write, opts)?;
        walk_versions(&mut it, key, &encoded, from_ts, limit, more)
    }

    /// One write-CF iterator for the write records of many keys ([`WriteCursor`]).
    pub fn write_cursor(&self) -> WriteCursor<'_, S> {
        WriteCursor {
            reader: self,
            it: None,
        }
    }

    /// The newest write record at or below `ts`.
    pub fn seek_write(&self, key: &[u8], ts: u64) -> Result<Option<(u64, Write)>> {
        Ok(self.walk_writes(key, ts, 1, |_| true)?.pop())
    }

    /// Every write record of the key with commit_ts at or above `ts`, newest first.
    pub fn writes_since(&self, key: &[u8], ts: u64) -> Result<Vec<(u64, Write)>> {
        self.walk_writes(key, u64::MAX, usize::MAX, |commit_ts| commit_ts >= ts)
    }

    /// Whether txn `start_ts` committed or rolled back on `key`.
    pub fn txn_commit_record(&self, key: &[u8], start_ts: u64) -> Result<TxnCommitRecord> {
        let writes = self.writes_since(key, start_ts)?;
        Ok(TxnCommitRecord::among(start_ts, writes))
    }

    /// Whether a write record newer than `ts` exists.
    pub fn has_write_after(&self, key: &[u8], ts: u64) -> Result<bool> {
        let newest = self.walk_writes(key, u64::MAX, 1, |commit_ts| commit_ts > ts)?;
        Ok(!newest.is_empty())
    }

    /// The write record at exactly `commit_ts`, if any.
    pub fn write_at(&self, key: &[u8], commit_ts: u64) -> Result<Option<Write>> {
        let mvcc_key = append_ts(&encode_key(key), commit_ts);
        match self.snap.get(Cf::Write, &mvcc_key)? {
            Some(bytes) => Ok(Some(Write::decode(key, &bytes)?)),
            None => Ok(None),
        }
    }

    pub fn load_value(&self, key: &[u8], start_ts: u64) -> Result<Vec<u8>> {
        self.snap
            .get(Cf::Default, &append_ts(&encode_key(key), start_ts))?
            .ok_or_else(|| {
                MvccError::Engine(engine::Error::Corruption {
                    cf: Cf::Default,
                    key: key.to_vec(),
                    detail: format!("the value of the version started at {start_ts} is missing"),
                })
            })
    }

    /// Fails with `KeyIsLocked` if the key's lock blocks a read at `ts`. (Only the lock CF:
    /// the locks kept in memory are pessimistic and block no read.)
    pub fn check_lock(&self, key: &[u8], ts: u64, resolved: &[u64]) -> Result<()> {
        if self.no_blocking_locks {
            return Ok(());
        }
        if let Some(lock) = self.load_stored_lock(key)?
            && blocks(key, &lock, ts, resolved)
        {
            return Err(MvccError::KeyIsLocked(LockInfo::new(key, &lock)));
        }
        Ok(())
    }

    /// Fails with `KeyIsLocked` for the first lock in `[start, end)` (`end` empty =
    /// unbounded) that blocks a read at `ts`: one pass over the lock CF, usually empty (as
    /// in `check_lock`, memory holds no lock that blocks).
    fn check_locks_in(&self, start: &[u8], end: &[u8], ts: u64, resolved: &[u64]) -> Result<()> {
        if self.no_blocking_locks {
            return Ok(());
        }
        let locks = self.scan_locks(start, end, ts, usize::MAX)?;
        match locks
            .into_iter()
            .find(|(key, lock)| blocks(key, lock, ts, resolved))
        {
            Some((key, lock)) => Err(MvccError::KeyIsLocked(LockInfo::new(&key, &lock))),
            None => Ok(()),
        }
    }

    /// The key's latest CF entry: its newest `Put` or `Delete`, if it has one.
    pub fn load_latest(&self, key: &[u8]) -> Result<Option<Latest>> {
        match self.snap.get(Cf::Latest, &encode_key(key))? {
            Some(bytes) => Ok(Some(Latest::decode(key, &bytes)?)),
            None => Ok(None),
        }
    }

    /// The committed value of `key` visible at `ts`, without looking at locks.
    pub fn get_committed(&self, key: &[u8], ts: u64) -> Result<Option<Vec<u8>>> {
        match self.load_latest(key)? {
            None => Ok(None),
            Some(latest) => self.value_at(key, latest, ts),
        }
    }

    /// The value of `key` at `ts`, given its newest data record.
    fn value_at(&self, key: &[u8], latest: Latest, ts: u64) -> Result<Option<Vec<u8>>> {
        if latest.commit_ts <= ts {
            self.value_of(key, latest.write)
        } else {
            self.walk_committed(key, ts)
        }
    }

    /// The value a data record gives: a `Put`'s value, a `Delete`'s none.
    fn value_of(&self, key: &[u8], write: Write) -> Result<Option<Vec<u8>>> {
        match (write.write_type, write.short_value) {
            (WriteType::Put, Some(v)) => Ok(Some(v)),
            (WriteType::Put, None) => self.load_value(key, write.start_ts).map(Some),
            _ => Ok(None),
        }
    }

    /// The committed value of `key` at `ts` from its write records.
    fn walk_committed(&self, key: &[u8], ts: u64) -> Result<Option<Vec<u8>>> {
        let mut ts = ts;
        loop {
            let Some((commit_ts, write)) = self.seek_write(key, ts)? else {
                return Ok(None);
            };
            if write.is_data() {
                return self.value_of(key, write);
            }
            if commit_ts == 0 {
                return Ok(None);
            }
            ts = commit_ts - 1;
        }
    }

    /// A snapshot-isolation read of `key` at `ts`; `resolved` lists txns known to be resolved.
    pub fn get(&self, key: &[u8], ts: u64, resolved: &[u64]) -> Result<Option<Vec<u8>>> {
        self.check_lock(key, ts, resolved)?;
        let value = self.get_committed(key, ts)?;
        if let Some(v) = &value {
            self.count_read(key.len() + v.len(), 1);
        }
        Ok(value)
    }

    fn count_read(&self, bytes: usize, keys: usize) {
        self.read_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        self.read_keys.fetch_add(keys as u64, Ordering::Relaxed);
    }

    /// Key and value bytes, and keys, that reads through `get` and scans returned so far.
    pub fn read_flow(&self) -> (u64, u64) {
        (
            self.read_bytes.load(Ordering::Relaxed),
            self.read_keys.load(Ordering::Relaxed),
        )
    }

    /// Distinct user keys with write records in `[start, end)` (`end` empty = unbounded), in
    /// order, at most `limit` (GC walks these).
    pub fn write_keys(&self, start: &[u8], end: &[u8], limit: usize) -> Result<Vec<Vec<u8>>> {
        let opts = key_range(start, end);
        let mut it = self.snap.iter(Cf::Write, opts)?;
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut ok = it.seek_to_first()?;
        while ok && keys.len() < limit {
            let (encoded, _) =
                split_versioned(it.key()).map_err(|e| corrupt_key(Cf::Write, it.key(), e))?;
            let key =
                codec::mvcc::decode_key(encoded).map_err(|e| corrupt_key(Cf::Write, encoded, e))?;
            if keys.last() != Some(&key) {
                keys.push(key);
            }
            ok = it.next()?;
        }
        Ok(keys)
    }

    /// Keys in `[start, end)` (`end` empty = unbounded) with their values at `ts`, at most
    /// `limit` pairs, in key order; locks of the txns in `resolved` do not block. One batch
    /// of a [`ScanCursor`].
    pub fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
        ts: u64,
        resolved: &[u64],
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.scan_cursor(start, end, ts, resolved)?
            .next_batch(limit)
    }

    /// A forward scan of `[start, end)` (`end` empty = unbounded) at `ts`, read batch by
    /// batch through one iterator (see [`ScanCursor`]).
    pub fn scan_cursor<'r>(
        &'r self,
        start: &[u8],
        end: &[u8],
        ts: u64,
        resolved: &'r [u64],
    ) -> Result<ScanCursor<'r, S>> {
        Ok(ScanCursor {
            reader: self,
            it: self.snap.iter(Cf::Latest, key_range(start, end))?,
            positioned: false,
            checked_to: start.to_vec(),
            end: end.to_vec(),
            ts,
            resolved,
        })
    }

    /// Locks in the lock CF on `[start, end)` whose txn started at or before `max_ts`, at
    /// most `limit`. (Pessimistic locks in memory: [`PessimisticLocks::scan`], taken before
    /// this reader's snapshot, and [`crate::pessimistic_locks::merge`].)
    pub fn scan_locks(
        &self,
        start: &[u8],
        end: &[u8],
        max_ts: u64,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Lock)>> {
        let opts = key_range(start, end);
        let mut it = self.snap.iter(Cf::Lock, opts)?;
        let mut out = Vec::new();
        let mut ok = it.seek_to_first()?;
        while ok && out.len() < limit {
            let key = codec::mvcc::decode_key(it.key())
                .map_err(|e| corrupt_key(Cf::Lock, it.key(), e))?;
            let lock = Lock::decode(&key, it.value())?;
            if lock.start_ts <= max_ts {
                out.push((key, lock));
            }
            ok = it.next()?;
        }
        Ok(out)
    }
}

/// A forward scan at one ts that goes on where its last batch stopped: one iterator walks
/// the latest CF in order (one entry per key, however many versions the key has), so the
/// batches of a long scan share one seek, and one pass over the lock CF per batch covers
/// the keys that batch walked, instead of a lock lookup and a fresh iterator per key. A key
/// written after `ts` walks its versions.
pub struct ScanCursor<'r, S: Snapshot + 'r> {
    reader: &'r MvccReader<S>,
    it: S::Iter<'r>,
    /// Whether the iterator has been positioned at the range's first entry.
    positioned: bool,
    /// The lock checks cover `[start, checked_to)`; the next batch checks on from there.
    checked_to: Vec<u8>,
    end: Vec<u8>,
    ts: u64,
    resolved: &'r [u64],
}

impl<S: Snapshot> ScanCursor<'_, S> {
    /// The next keys with their values at the cursor's ts, at most `limit` pairs; fewer
    /// only when the range is exhausted.
    pub fn next_batch(&mut self, limit: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        let mut ok = if !self.positioned {
            self.positioned = true;
            self.it.seek_to_first()?
        } else if self.it.valid() {
            true
        } else {
            // Exhausted: the last batch's lock check reached the range's end.
            return Ok(out);
        };
        while ok && out.len() < limit {
            let key = codec::mvcc::decode_key(self.it.key())
                .map_err(|e| corrupt_key(Cf::Latest, self.it.key(), e))?;
            let latest = Latest::decode(&key, self.it.value())?;
            if let Some(value) = self.reader.value_at(&key, latest, self.ts)? {
                out.push((key, value));
            }
            ok = self.it.next()?;
        }
        // Locks matter up to the last key returned, not to the next one; once the range is
        // exhausted, up to its end.
        let stopped_at = match out.last() {
            Some((last, _)) if ok => {
                let mut after = last.clone();
                after.push(0);
                after
            }
            _ => self.end.clone(),
        };
        self.reader
            .check_locks_in(&self.checked_to, &stopped_at, self.ts, self.resolved)?;
        self.checked_to = stopped_at;
        let bytes = out.iter().map(|(k, v)| k.len() + v.len()).sum();
        self.reader.count_read(bytes, out.len());
        Ok(out)
    }
}
