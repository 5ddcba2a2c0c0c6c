//! [`GroupStorage`]: raft-rs's `Storage` for one group, over the shared [`LogEngine`] and a
//! cache of the log's tail.
//!
//! Invariants:
//! - `first_index() == truncated_index + 1` and `term(truncated_index) == truncated_term`: the
//!   log holds no entry at or below the truncated index that raft-rs may ask for, whatever
//!   raft-engine still keeps on disk before it purges;
//! - `last_index() >= truncated_index`; the cache holds a contiguous run of entries ending at
//!   `last_index()` (or nothing), never more than [`ENTRY_CACHE_BYTES_MAX`] unless that run
//!   is a single entry;
//! - entries the owner appended ([`GroupStorage::append`]) are visible at once, as raft-rs
//!   needs before `advance_append_async`, while the write that carries them may still be on
//!   its way to disk: every entry above the persisted index ([`GroupStorage::persisted_to`])
//!   stays in the cache, whatever its size, because raft-engine may not have it yet.
//!
//! Snapshots are the user's state, not the log's: when raft-rs asks for one that is not at
//! hand, the storage answers "temporarily unavailable" and raises a request
//! ([`GroupStorage::take_snapshot_request`]); the user builds it and hands it over with
//! [`GroupStorage::set_snapshot`], and raft-rs takes it on its next try.

use std::cell::Cell;
use std::collections::VecDeque;

use protobuf::Message as _;
use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use raft::{GetEntriesContext, RaftState, StorageError};

use crate::{Error, LogEngine, Result};

/// Bytes of a group's newest entries kept in memory, so a leader sending to followers that
/// keep up and a peer applying what it just persisted do not read raft-engine's files.
pub const ENTRY_CACHE_BYTES_MAX: usize = 1 << 20;

/// What the log's user keeps with its applied state and hands back on open: where the log
/// begins and the membership raft-rs starts from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogBase {
    pub truncated_index: u64,
    pub truncated_term: u64,
    pub conf_state: ConfState,
}

pub struct GroupStorage {
    log: LogEngine,
    group: u64,
    hard_state: HardState,
    base: LogBase,
    last_index: u64,
    last_term: u64,
    /// Entries up to here are durable in raft-engine.
    persisted: u64,
    cache: VecDeque<Entry>,
    cache_bytes: usize,
    snapshot: Option<Snapshot>,
    snapshot_wanted: Cell<bool>,
}

impl GroupStorage {
    /// The storage of `group` as the log holds it, from `base` on.
    pub fn open(log: &LogEngine, group: u64, base: LogBase) -> Result<GroupStorage> {
        let hard_state = log.hard_state(group)?.unwrap_or_default();
        let mut storage = GroupStorage {
            log: log.clone(),
            group,
            hard_state,
            last_index: base.truncated_index,
            last_term: base.truncated_term,
            persisted: 0,
            base,
            cache: VecDeque::new(),
            cache_bytes: 0,
            snapshot: None,
            snapshot_wanted: Cell::new(false),
        };
        // A log that ends at or below the truncated index is stale (a snapshot replaced it
        // and a crash came before the log was cleared): appends must follow the snapshot,
        // and raft-engine refuses a hole, so it goes now.
        if let Some(last) = log.last_index(group)
            && last <= storage.base.truncated_index
        {
            log.compact_to(group, storage.base.truncated_index + 1);
        }
        if let Some(last) = log.last_index(group)
            && last > storage.base.truncated_index
        {
            let entry = storage.fetch_one(last)?;
            storage.last_index = last;
            storage.last_term = entry.term;
        }
        storage.persisted = storage.last_index;
        if storage.hard_state.commit > storage.last_index {
            return Err(Error::Corrupt {
                group,
                detail: format!(
                    "commit index {} is past the last entry {}",
                    storage.hard_state.commit, storage.last_index
                ),
            });
        }
        Ok(storage)
    }

    pub fn group(&self) -> u64 {
        self.group
    }

    pub fn hard_state(&self) -> &HardState {
        &self.hard_state
    }

    pub fn base(&self) -> &LogBase {
        &self.base
    }

    pub fn last_index(&self) -> u64 {
        self.last_index
    }

    /// Shows `entries` to raft-rs as the log's tail: they replace the log from their first
    /// index on (a follower overwriting a deposed leader's tail). The owner's write carrying
    /// them may not be durable yet; they stay cached until [`GroupStorage::persisted_to`].
    pub fn append(&mut self, entries: &[Entry]) {
        let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
            return;
        };
        // Replace the cached tail from `first` on; a gap (after a snapshot) empties the cache.
        let cached_first = self.cache.front().map(|e| e.index);
        match cached_first {
            Some(cf) if first.index > cf && first.index <= self.last_index + 1 => {
                while self.cache.back().is_some_and(|e| e.index >= first.index) {
                    let e = self.cache.pop_back().expect("checked");
                    self.cache_bytes -= e.compute_size() as usize;
                }
            }
            _ => {
                self.cache.clear();
                self.cache_bytes = 0;
            }
        }
        for e in entries {
            self.cache_bytes += e.compute_size() as usize;
            self.cache.push_back(e.clone());
        }
        self.persisted = self.persisted.min(first.index - 1);
        self.last_index = last.index;
        self.last_term = last.term;
        self.trim_cache();
    }

    /// The hard state the owner's latest write carries.
    pub fn set_hard_state(&mut self, hard_state: &HardState) {
        self.hard_state = hard_state.clone();
    }

    /// The log is durable through `index`: the entries up to it may leave the cache.
    pub fn persisted_to(&mut self, index: u64) {
        self.persisted = self.persisted.max(index.min(self.last_index));
        self.trim_cache();
    }

    /// Keeps the cache within [`ENTRY_CACHE_BYTES_MAX`] by dropping its oldest durable entries.
    fn trim_cache(&mut self) {
        while self.cache_bytes > ENTRY_CACHE_BYTES_MAX
            && self.cache.len() > 1
            && self
                .cache
                .front()
                .is_some_and(|e| e.index <= self.persisted)
        {
            let e = self.cache.pop_front().expect("checked");
            self.cache_bytes -= e.compute_size() as usize;
        }
    }

    /// The log now begins after `index` (of `term`): a replicated compaction was applied.
    /// raft-engine's copy goes later, once the caller's state below `index` is durable.
    pub fn compact_to(&mut self, index: u64, term: u64) {
        if index <= self.base.truncated_index {
            return;
        }
        self.base.truncated_index = index;
        self.base.truncated_term = term;
        while self.cache.front().is_some_and(|e| e.index <= index) {
            let e = self.cache.pop_front().expect("checked");
            self.cache_bytes -= e.compute_size() as usize;
        }
        if index > self.last_index {
            self.last_index = index;
            self.last_term = term;
        }
    }

    /// The membership changed by an applied conf change.
    pub fn set_conf_state(&mut self, cs: ConfState) {
        self.base.conf_state = cs;
    }

    /// The log was replaced by a snapshot at `base` (the caller clears it in the same write
    /// that saves `hard_state`).
    pub fn on_snapshot(&mut self, base: LogBase, hard_state: &HardState) {
        self.last_index = base.truncated_index;
        self.last_term = base.truncated_term;
        self.persisted = base.truncated_index;
        self.base = base;
        self.hard_state = hard_state.clone();
        self.cache.clear();
        self.cache_bytes = 0;
    }

    /// Whether raft-rs asked for a snapshot it could not have; clears the request.
    pub fn take_snapshot_request(&self) -> bool {
        self.snapshot_wanted.replace(false)
    }

    /// The snapshot raft-rs gets from now on (until a newer one replaces it).
    pub fn set_snapshot(&mut self, snapshot: Snapshot) {
        self.snapshot = Some(snapshot);
    }

    fn fetch_one(&self, index: u64) -> Result<Entry> {
        let mut out = Vec::with_capacity(1);
        self.log
            .fetch(self.group, index, index + 1, None, &mut out)?;
        match out.pop() {
            Some(e) if e.index == index => Ok(e),
            other => Err(Error::Corrupt {
                group: self.group,
                detail: format!("asked for entry {index}, got {:?}", other.map(|e| e.index)),
            }),
        }
    }

    fn cached(&self, index: u64) -> Option<&Entry> {
        let first = self.cache.front()?.index;
        if index < first {
            return None;
        }
        self.cache.get((index - first) as usize)
    }
}

fn store_error(e: Error) -> raft::Error {
    raft::Error::Store(StorageError::Other(Box::new(e)))
}

impl raft::Storage for GroupStorage {
    fn initial_state(&self) -> raft::Result<RaftState> {
        Ok(RaftState::new(
            self.hard_state.clone(),
            self.base.conf_state.clone(),
        ))
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        if low <= self.base.truncated_index {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > self.last_index + 1 {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        let max_size = max_size.into();
        let mut out = Vec::with_capacity((high - low) as usize);
        let cache_first = self.cache.front().map_or(high, |e| e.index.max(low));
        if low < cache_first {
            let limit = max_size.map(|m| m as usize);
            self.log
                .fetch(self.group, low, cache_first.min(high), limit, &mut out)
                .map_err(store_error)?;
            if out.len() as u64 != cache_first.min(high) - low {
                // A size limit cut the read short; the cache's entries would only be cut too.
                raft::util::limit_size(&mut out, max_size);
                return Ok(out);
            }
        }
        for index in cache_first..high {
            match self.cached(index) {
                Some(e) => out.push(e.clone()),
                None => break,
            }
        }
        raft::util::limit_size(&mut out, max_size);
        Ok(out)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        if idx == self.base.truncated_index {
            return Ok(self.base.truncated_term);
        }
        if idx < self.base.truncated_index {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if idx > self.last_index {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        if idx == self.last_index {
            return Ok(self.last_term);
        }
        if let Some(e) = self.cached(idx) {
            return Ok(e.term);
        }
        Ok(self.fetch_one(idx).map_err(store_error)?.term)
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.base.truncated_index + 1)
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.last_index)
    }

    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        let usable = |s: &Snapshot| {
            let meta = s.get_metadata();
            let cs = meta.get_conf_state();
            // Older than the log's start, a follower could not go on from it by the log; and
            // a peer the snapshot's membership does not list would refuse it.
            meta.index >= request_index.max(self.base.truncated_index)
                && [
                    &cs.voters,
                    &cs.learners,
                    &cs.voters_outgoing,
                    &cs.learners_next,
                ]
                .iter()
                .any(|ids| ids.contains(&to))
        };
        match &self.snapshot {
            Some(s) if usable(s) => Ok(s.clone()),
            _ => {
                self.snapshot_wanted.set(true);
                Err(raft::Error::Store(
                    StorageError::SnapshotTemporarilyUnavailable,
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use raft::Storage;

    use super::*;
    use crate::{LogConfig, LogWrite};

    fn entry(index: u64, term: u64, bytes: usize) -> Entry {
        Entry {
            index,
            term,
            data: vec![index as u8; bytes].into(),
            ..Entry::default()
        }
    }

    fn write(log: &LogEngine, s: &mut GroupStorage, entries: &[Entry], commit: u64) {
        let mut w = LogWrite::default();
        w.append(s.group(), entries).unwrap();
        let mut hs = s.hard_state().clone();
        hs.commit = commit;
        hs.term = entries.last().map_or(hs.term, |e| e.term);
        w.put_hard_state(s.group(), &hs, true).unwrap();
        s.append(entries);
        s.set_hard_state(&hs);
        log.write(&mut w).unwrap();
        s.persisted_to(s.last_index());
    }

    fn base(index: u64, term: u64) -> LogBase {
        LogBase {
            truncated_index: index,
            truncated_term: term,
            conf_state: ConfState::default(),
        }
    }

    #[test]
    fn a_reopened_log_shows_what_was_written_and_a_replaced_tail_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig::new(dir.path().to_path_buf());
        {
            let log = LogEngine::open(&config).unwrap();
            let mut s = GroupStorage::open(&log, 7, base(5, 5)).unwrap();
            let first: Vec<_> = (6..=10).map(|i| entry(i, 6, 10)).collect();
            write(&log, &mut s, &first, 8);
            // A new leader's entries replace 9 and 10.
            write(&log, &mut s, &[entry(9, 7, 3)], 8);
            assert_eq!(s.last_index(), 9);
            assert_eq!(s.term(9).unwrap(), 7);
        }
        let log = LogEngine::open(&config).unwrap();
        let s = GroupStorage::open(&log, 7, base(5, 5)).unwrap();
        assert_eq!(s.hard_state().commit, 8);
        assert_eq!(s.last_index(), 9);
        assert_eq!(s.term(8).unwrap(), 6);
        assert_eq!(s.term(9).unwrap(), 7);
        assert_eq!(s.term(5).unwrap(), 5);
        assert!(matches!(
            s.term(4),
            Err(raft::Error::Store(StorageError::Compacted))
        ));
        let all = s
            .entries(6, 10, None, GetEntriesContext::empty(false))
            .unwrap();
        let idx: Vec<_> = all.iter().map(|e| (e.index, e.term)).collect();
        assert_eq!(idx, vec![(6, 6), (7, 6), (8, 6), (9, 7)]);
        assert!(
            s.entries(6, 11, None, GetEntriesContext::empty(false))
                .is_err()
        );
    }

    #[test]
    fn entries_come_from_disk_and_cache_alike_within_the_size_limit() {
        let dir = tempfile::tempdir().unwrap();
        let log = LogEngine::open(&LogConfig::new(dir.path().to_path_buf())).unwrap();
        let mut s = GroupStorage::open(&log, 1, base(0, 0)).unwrap();
        // Big entries push the early ones out of the cache.
        let big: Vec<_> = (1..=4).map(|i| entry(i, 1, 400 << 10)).collect();
        write(&log, &mut s, &big, 4);
        assert!(s.cached(1).is_none(), "entry 1 left the cache");
        assert!(s.cached(4).is_some());
        let ctx = || GetEntriesContext::empty(false);
        let all = s.entries(1, 5, None, ctx()).unwrap();
        assert_eq!(
            all.iter().map(|e| e.index).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
        assert_eq!(all, big);
        let limited = s.entries(1, 5, Some(900 << 10), ctx()).unwrap();
        assert_eq!(limited.len(), 2);
        let one = s.entries(3, 5, Some(1), ctx()).unwrap();
        assert_eq!(one.len(), 1, "at least one entry whatever the limit");
    }

    #[test]
    fn entries_not_yet_durable_stay_cached_past_the_limit_until_their_write_returns() {
        let dir = tempfile::tempdir().unwrap();
        let log = LogEngine::open(&LogConfig::new(dir.path().to_path_buf())).unwrap();
        let mut s = GroupStorage::open(&log, 1, base(0, 0)).unwrap();
        let big: Vec<_> = (1..=4).map(|i| entry(i, 1, 400 << 10)).collect();
        let mut w = LogWrite::default();
        w.append(1, &big).unwrap();
        s.append(&big);
        // The write is still on its way: raft-rs must find every entry, in the cache.
        assert!((1..=4).all(|i| s.cached(i).is_some()));
        let ctx = || GetEntriesContext::empty(false);
        assert_eq!(s.entries(1, 5, None, ctx()).unwrap(), big);
        log.write(&mut w).unwrap();
        s.persisted_to(4);
        assert!(s.cached(1).is_none(), "durable entries leave the cache");
        assert_eq!(s.entries(1, 5, None, ctx()).unwrap(), big);
        // A new leader's tail replaces entry 4: its entries are not durable, whatever was.
        let tail: Vec<_> = (4..=6).map(|i| entry(i, 2, 400 << 10)).collect();
        s.append(&tail);
        assert!(s.cached(3).is_none(), "entry 3 is durable and leaves");
        assert!((4..=6).all(|i| s.cached(i).is_some_and(|e| e.term == 2)));
    }

    #[test]
    fn compaction_moves_the_first_index_and_a_snapshot_replaces_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig::new(dir.path().to_path_buf());
        let log = LogEngine::open(&config).unwrap();
        let mut s = GroupStorage::open(&log, 3, base(0, 0)).unwrap();
        let ents: Vec<_> = (1..=6).map(|i| entry(i, 2, 8)).collect();
        write(&log, &mut s, &ents, 6);
        s.compact_to(4, 2);
        log.compact_to(3, 5);
        assert_eq!(s.first_index().unwrap(), 5);
        assert_eq!(s.term(4).unwrap(), 2);
        assert!(
            s.entries(4, 6, None, GetEntriesContext::empty(false))
                .is_err()
        );

        let mut w = LogWrite::default();
        w.clear(3);
        let hs = HardState {
            term: 9,
            commit: 20,
            ..HardState::default()
        };
        w.put_hard_state(3, &hs, true).unwrap();
        log.write(&mut w).unwrap();
        s.on_snapshot(base(20, 8), &hs);
        assert_eq!((s.first_index().unwrap(), s.last_index()), (21, 20));
        drop(s);
        drop(log);
        let log = LogEngine::open(&config).unwrap();
        let s = GroupStorage::open(&log, 3, base(20, 8)).unwrap();
        assert_eq!((s.hard_state().term, s.hard_state().commit), (9, 20));
        assert_eq!(s.last_index(), 20);
        assert_eq!(s.term(20).unwrap(), 8);
    }

    #[test]
    fn a_commit_index_past_the_log_is_refused_as_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let log = LogEngine::open(&LogConfig::new(dir.path().to_path_buf())).unwrap();
        let mut w = LogWrite::default();
        let hs = HardState {
            commit: 9,
            ..HardState::default()
        };
        w.put_hard_state(2, &hs, true).unwrap();
        log.write(&mut w).unwrap();
        let err = GroupStorage::open(&log, 2, base(5, 5))
            .err()
            .expect("refused");
        assert!(err.to_string().contains("past the last entry"), "{err}");
    }
}

#[cfg(test)]
mod stale_log_tests {
    use super::*;
    use crate::{LogConfig, LogWrite};

    #[test]
    fn a_log_left_below_the_truncated_index_is_dropped_on_open_so_appends_follow_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = LogEngine::open(&LogConfig::new(dir.path().to_path_buf())).unwrap();
        let entry = |index, term| Entry {
            index,
            term,
            ..Entry::default()
        };
        let mut w = LogWrite::default();
        w.append(4, &[entry(6, 6), entry(7, 6)]).unwrap();
        log.write(&mut w).unwrap();
        // A snapshot at 20 reached the kv engine; the crash came before the log was cleared.
        let base = LogBase {
            truncated_index: 20,
            truncated_term: 7,
            conf_state: ConfState::default(),
        };
        let mut s = GroupStorage::open(&log, 4, base).unwrap();
        assert_eq!(s.last_index(), 20);
        let next = [entry(21, 7)];
        let mut w = LogWrite::default();
        w.append(4, &next).unwrap();
        s.append(&next);
        log.write(&mut w).unwrap();
        s.persisted_to(21);
        assert_eq!(s.last_index(), 21);
    }
}
