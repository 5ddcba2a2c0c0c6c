//! Percolator action sequences on an in-memory engine, each checking what clients would see.

use std::sync::Arc;

use base::ts::compose;
use engine::memory::{MemoryEngine, MemorySnapshot};
use engine::{Cf, KvEngine, Peekable, WriteBatch};
use mvcc::actions::acquire_pessimistic_lock::acquire_pessimistic_lock;
use mvcc::actions::check_txn_status::{TxnStatus, check_txn_status};
use mvcc::actions::commit::{commit, commit_one_pc};
use mvcc::actions::prewrite::{KeyCheck, Mutation, Prewritten, TxnProps, check_prewrite, prewrite};
use mvcc::actions::rollback::rollback;
use mvcc::actions::txn_heart_beat::txn_heart_beat;
use mvcc::record::LockType;
use mvcc::{LockTable, MvccError, MvccReader, MvccTxn, PessimisticLocks, Probe, Result, WriteType};

/// Timestamps at 1 ms of physical time per unit, so TTLs mean something.
fn ts(ms: u64) -> u64 {
    compose(1_000_000 + ms, 0)
}

/// An engine, its lock table and its pessimistic locks in memory, kept as the kv node
/// keeps them.
struct Store(MemoryEngine, LockTable, Arc<PessimisticLocks>);

impl Store {
    fn new() -> Store {
        Store::with_pessimistic_locks(PessimisticLocks::new(true, usize::MAX))
    }

    fn with_pessimistic_locks(locks: PessimisticLocks) -> Store {
        Store(MemoryEngine::new(), LockTable::default(), Arc::new(locks))
    }

    /// Runs one command: read through a fresh snapshot, then write its batch.
    fn run<T>(
        &self,
        f: impl FnOnce(&mut MvccTxn, &MvccReader<MemorySnapshot>) -> Result<T>,
    ) -> Result<T> {
        let reader = MvccReader::new(self.0.snapshot()).with_pessimistic_locks(self.2.clone());
        let mut txn = MvccTxn::new();
        let out = f(&mut txn, &reader)?;
        let mut wb = self.0.write_batch();
        let changes = txn.fill(&mut wb, Some(&self.2));
        self.0.write(wb, true).unwrap();
        self.1.apply(changes.lock_table);
        self.2.apply(changes.pessimistic);
        Ok(out)
    }

    fn props(primary: &[u8], start: u64) -> TxnProps {
        TxnProps {
            primary: primary.to_vec(),
            start_ts: start,
            ttl_ms: 3000,
            for_update_ts: 0,
            txn_size: 1,
            min_commit_ts: 0,
        }
    }

    fn prewrite(&self, m: Mutation, primary: &[u8], start: u64) -> Result<()> {
        self.run(|txn, r| {
            prewrite(
                txn,
                r,
                &Store::props(primary, start),
                m,
                KeyCheck::NoNewerWrite,
            )
        })
    }

    /// A pessimistic txn's prewrite of a put over its own lock on `key` (its primary),
    /// taken at `for_update`.
    fn put_locked(&self, key: &[u8], value: &[u8], start: u64, for_update: u64) -> Result<()> {
        let props = TxnProps {
            for_update_ts: for_update,
            ..Store::props(key, start)
        };
        let put = Mutation::Put(key.to_vec(), value.to_vec());
        self.run(|txn, r| prewrite(txn, r, &props, put, KeyCheck::PessimisticLock))
    }

    fn put(&self, key: &[u8], value: &[u8], primary: &[u8], start: u64) -> Result<()> {
        self.prewrite(Mutation::Put(key.to_vec(), value.to_vec()), primary, start)
    }

    fn commit(&self, key: &[u8], start: u64, commit_ts: u64) -> Result<()> {
        self.run(|txn, r| commit(txn, r, key, start, commit_ts))
    }

    fn rollback(&self, key: &[u8], start: u64) -> Result<()> {
        self.run(|txn, r| rollback(txn, r, key, start))
    }

    /// A read as the kv node does it: probe the lock table, then take the snapshot.
    fn get(&self, key: &[u8], at: u64) -> Result<Option<Vec<u8>>> {
        let unlocked = self.1.probe_key(key, at) == Probe::Free;
        MvccReader::after_lock_probe(self.0.snapshot(), unlocked).get(key, at, &[])
    }

    fn scan(&self, start: &[u8], end: &[u8], at: u64) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let unlocked = self.1.probe_range(start, end, at) == Probe::Free;
        MvccReader::after_lock_probe(self.0.snapshot(), unlocked).scan(
            start,
            end,
            usize::MAX,
            at,
            &[],
        )
    }

    /// A committed put in one go.
    fn write(&self, key: &[u8], value: &[u8], start: u64, commit_ts: u64) {
        self.put(key, value, key, start).unwrap();
        self.commit(key, start, commit_ts).unwrap();
    }
}

fn v(s: &str) -> Option<Vec<u8>> {
    Some(s.as_bytes().to_vec())
}

#[test]
fn reads_see_the_version_committed_at_or_before_their_ts() {
    let s = Store::new();
    s.write(b"k", b"v1", ts(10), ts(11));
    s.write(b"k", b"v2", ts(20), ts(21));
    s.run(|txn, r| {
        prewrite(
            txn,
            r,
            &Store::props(b"k", ts(30)),
            Mutation::Delete(b"k".to_vec()),
            KeyCheck::NoNewerWrite,
        )
    })
    .unwrap();
    s.commit(b"k", ts(30), ts(31)).unwrap();
    assert_eq!(s.get(b"k", ts(5)).unwrap(), None);
    assert_eq!(s.get(b"k", ts(11)).unwrap(), v("v1"));
    assert_eq!(s.get(b"k", ts(20)).unwrap(), v("v1"));
    assert_eq!(s.get(b"k", ts(25)).unwrap(), v("v2"));
    assert_eq!(s.get(b"k", ts(40)).unwrap(), None);
}

#[test]
fn a_lock_blocks_readers_after_its_start_ts_only() {
    let s = Store::new();
    s.write(b"k", b"old", ts(1), ts(2));
    s.put(b"k", b"new", b"k", ts(10)).unwrap();
    assert!(
        matches!(s.get(b"k", ts(15)), Err(MvccError::KeyIsLocked(ref l)) if l.start_ts == ts(10) && l.primary == b"k")
    );
    assert_eq!(s.get(b"k", ts(9)).unwrap(), v("old"));
    // A reader that already resolved that txn reads past it.
    assert_eq!(
        MvccReader::new(s.0.snapshot())
            .get(b"k", ts(15), &[ts(10)])
            .unwrap(),
        v("old")
    );
    s.commit(b"k", ts(10), ts(12)).unwrap();
    assert_eq!(s.get(b"k", ts(15)).unwrap(), v("new"));
}

#[test]
fn conflicting_writers_are_detected() {
    let s = Store::new();
    s.write(b"k", b"a", ts(10), ts(20));
    // Started before that commit: write conflict.
    let err = s.put(b"k", b"b", b"k", ts(15)).unwrap_err();
    assert!(
        matches!(err, MvccError::WriteConflict { conflict_commit_ts, .. } if conflict_commit_ts == ts(20)),
        "{err}"
    );
    // Another txn's lock: KeyIsLocked.
    s.put(b"k", b"c", b"k", ts(30)).unwrap();
    assert!(matches!(
        s.put(b"k", b"d", b"k", ts(31)),
        Err(MvccError::KeyIsLocked(_))
    ));
    // The same txn again: idempotent.
    s.put(b"k", b"c", b"k", ts(30)).unwrap();
}

#[test]
fn an_insert_prewrites_only_a_key_whose_newest_version_is_no_value() {
    let s = Store::new();
    let insert = |key: &[u8], start| {
        let m = Mutation::Insert(key.to_vec(), b"new".to_vec());
        s.prewrite(m, key, start)
    };
    s.write(b"k", b"v", ts(10), ts(11));
    let err = insert(b"k", ts(20)).unwrap_err();
    assert!(
        matches!(&err, MvccError::AlreadyExist { key } if key == b"k"),
        "{err}"
    );
    // Nothing written: another txn may still take the key.
    assert_eq!(stored_lock(&s, b"k"), None);
    // A key deleted, or only locked since, has no value: the insert is a put.
    s.run(|txn, r| {
        let m = Mutation::Delete(b"k".to_vec());
        prewrite(
            txn,
            r,
            &Store::props(b"k", ts(30)),
            m,
            KeyCheck::NoNewerWrite,
        )
    })
    .unwrap();
    s.commit(b"k", ts(30), ts(31)).unwrap();
    s.run(|txn, r| {
        let m = Mutation::Lock(b"k".to_vec());
        prewrite(
            txn,
            r,
            &Store::props(b"k", ts(40)),
            m,
            KeyCheck::NoNewerWrite,
        )
    })
    .unwrap();
    s.commit(b"k", ts(40), ts(41)).unwrap();
    insert(b"k", ts(50)).unwrap();
    s.commit(b"k", ts(50), ts(51)).unwrap();
    assert_eq!(s.get(b"k", ts(60)).unwrap(), v("new"));
    // A key never written, too; a commit since the txn's start is a conflict first.
    insert(b"fresh", ts(70)).unwrap();
    s.write(b"late", b"v", ts(80), ts(81));
    assert!(matches!(
        insert(b"late", ts(75)),
        Err(MvccError::WriteConflict { .. })
    ));
}

#[test]
fn a_rollback_stops_a_late_prewrite_and_a_late_commit() {
    let s = Store::new();
    s.rollback(b"k", ts(30)).unwrap();
    assert!(matches!(
        s.put(b"k", b"x", b"k", ts(30)),
        Err(MvccError::AlreadyRolledBack { .. })
    ));
    assert!(matches!(
        s.commit(b"k", ts(30), ts(31)),
        Err(MvccError::TxnLockNotFound { .. })
    ));
    // Rolling back after a prewrite removes the lock and value.
    s.put(b"j", &vec![9; 1000], b"j", ts(40)).unwrap();
    s.rollback(b"j", ts(40)).unwrap();
    assert_eq!(s.get(b"j", ts(50)).unwrap(), None);
    assert!(s.0.snapshot_is_empty_of(Cf::Default));
    assert!(matches!(
        s.commit(b"j", ts(40), ts(41)),
        Err(MvccError::TxnLockNotFound { .. })
    ));
}

#[test]
fn commit_is_idempotent_and_a_committed_txn_cannot_be_rolled_back() {
    let s = Store::new();
    s.write(b"k", b"v", ts(10), ts(11));
    s.commit(b"k", ts(10), ts(11)).unwrap();
    assert!(
        matches!(s.rollback(b"k", ts(10)), Err(MvccError::Committed { commit_ts, .. }) if commit_ts == ts(11))
    );
    assert_eq!(s.get(b"k", ts(12)).unwrap(), v("v"));
}

#[test]
fn large_values_live_in_the_default_cf() {
    let s = Store::new();
    let big = vec![7u8; 4096];
    s.put(b"k", &big, b"k", ts(10)).unwrap();
    s.commit(b"k", ts(10), ts(11)).unwrap();
    assert_eq!(s.get(b"k", ts(12)).unwrap(), Some(big));
}

#[test]
fn locks_of_a_dead_txn_are_resolved_by_ttl() {
    let s = Store::new();
    s.write(b"a", b"a0", ts(1), ts(2));
    s.write(b"b", b"b0", ts(1), ts(2));
    // Txn 10 prewrites both keys with a 100 ms TTL and dies.
    let props = TxnProps {
        ttl_ms: 100,
        ..Store::props(b"a", ts(10))
    };
    for key in [b"a", b"b"] {
        s.run(|txn, r| {
            prewrite(
                txn,
                r,
                &props,
                Mutation::Put(key.to_vec(), b"x".to_vec()),
                KeyCheck::NoNewerWrite,
            )
        })
        .unwrap();
    }
    // A reader at 50 ms: the lock is alive; its min_commit_ts is pushed past the reader.
    let status = s
        .run(|txn, r| check_txn_status(txn, r, b"a", ts(10), ts(50), ts(50), false))
        .unwrap();
    assert!(
        matches!(status, TxnStatus::Locked(ref l) if l.min_commit_ts == ts(50) + 1),
        "{status:?}"
    );
    assert_eq!(
        s.get(b"a", ts(50)).unwrap(),
        v("a0"),
        "pushed: the reader at 50 need not wait"
    );
    // At 200 ms the TTL has run out: the primary is rolled back; the secondary follows.
    let status = s
        .run(|txn, r| check_txn_status(txn, r, b"a", ts(10), ts(200), ts(200), false))
        .unwrap();
    assert_eq!(status, TxnStatus::TtlExpired);
    s.rollback(b"b", ts(10)).unwrap();
    assert_eq!(s.get(b"a", ts(300)).unwrap(), v("a0"));
    assert_eq!(s.get(b"b", ts(300)).unwrap(), v("b0"));
    assert!(matches!(
        s.commit(b"a", ts(10), ts(250)),
        Err(MvccError::TxnLockNotFound { .. })
    ));
}

#[test]
fn a_committed_primary_lets_secondaries_roll_forward() {
    let s = Store::new();
    for key in [b"p", b"s"] {
        s.run(|txn, r| {
            prewrite(
                txn,
                r,
                &Store::props(b"p", ts(10)),
                Mutation::Put(key.to_vec(), b"1".to_vec()),
                KeyCheck::NoNewerWrite,
            )
        })
        .unwrap();
    }
    s.commit(b"p", ts(10), ts(11)).unwrap();
    let status = s
        .run(|txn, r| check_txn_status(txn, r, b"p", ts(10), ts(20), ts(20), true))
        .unwrap();
    assert_eq!(status, TxnStatus::Committed { commit_ts: ts(11) });
    s.commit(b"s", ts(10), ts(11)).unwrap();
    assert_eq!(s.get(b"s", ts(20)).unwrap(), v("1"));
    // No trace of a txn: with rollback_if_not_exist it is fenced off.
    let status = s
        .run(|txn, r| check_txn_status(txn, r, b"q", ts(30), ts(40), ts(40), true))
        .unwrap();
    assert_eq!(status, TxnStatus::LockNotExistRollback);
    assert!(matches!(
        s.put(b"q", b"late", b"q", ts(30)),
        Err(MvccError::AlreadyRolledBack { .. })
    ));
    assert!(matches!(
        s.run(|txn, r| check_txn_status(txn, r, b"z", ts(30), ts(40), ts(40), false)),
        Err(MvccError::TxnNotFound { .. })
    ));
}

#[test]
fn a_pessimistic_lock_then_prewrite_then_commit() {
    let s = Store::new();
    s.write(b"k", b"v0", ts(1), ts(2));
    let lock = |start, for_update| {
        s.run(|txn, r| acquire_pessimistic_lock(txn, r, b"k", b"k", start, for_update, 3000))
    };
    lock(ts(10), ts(10)).unwrap();
    // The pessimistic lock does not block readers, but blocks other lockers and writers.
    assert_eq!(s.get(b"k", ts(15)).unwrap(), v("v0"));
    assert!(matches!(
        lock(ts(11), ts(11)),
        Err(MvccError::KeyIsLocked(_))
    ));
    assert!(matches!(
        s.put(b"k", b"x", b"k", ts(12)),
        Err(MvccError::KeyIsLocked(_))
    ));
    // Committing before the prewrite is refused.
    assert!(matches!(
        s.commit(b"k", ts(10), ts(20)),
        Err(MvccError::LockTypeNotMatch { .. })
    ));
    s.put_locked(b"k", b"v1", ts(10), ts(10)).unwrap();
    s.commit(b"k", ts(10), ts(20)).unwrap();
    assert_eq!(s.get(b"k", ts(25)).unwrap(), v("v1"));
    // A prewrite that expects a pessimistic lock which is not there fails.
    assert!(matches!(
        s.put_locked(b"k", b"v2", ts(30), ts(30)),
        Err(MvccError::PessimisticLockNotFound { .. })
    ));
}

#[test]
fn a_pessimistic_lock_sees_commits_after_its_for_update_ts_as_conflicts() {
    let s = Store::new();
    s.write(b"k", b"v0", ts(12), ts(15));
    let lock = |for_update| {
        s.run(|txn, r| acquire_pessimistic_lock(txn, r, b"k", b"k", ts(10), for_update, 3000))
    };
    // Statement ts 14, or one tick before the commit at 15, did not see it: the statement
    // must retry...
    for for_update in [ts(14), ts(15) - 1] {
        assert!(matches!(
            lock(for_update),
            Err(MvccError::WriteConflict { .. })
        ));
    }
    // ...with a fresh for_update_ts, which succeeds from the commit's own ts on.
    lock(ts(15)).unwrap();
}

#[test]
fn a_pessimistic_lock_is_refused_to_a_txn_that_already_rolled_back_or_committed() {
    let s = Store::new();
    let lock = |key: &[u8], start, for_update| {
        s.run(|txn, r| acquire_pessimistic_lock(txn, r, key, key, start, for_update, 3000))
    };
    // Txn 10 was rolled back on a key that others went on committing.
    s.rollback(b"k", ts(10)).unwrap();
    for i in 11..20 {
        s.write(b"k", b"v", ts(i), ts(i) + 1);
    }
    // Its first statement (for_update_ts = start_ts) sees the newer commits as conflicts; the
    // statement retried after them learns of the rollback.
    assert!(matches!(
        lock(b"k", ts(10), ts(10)),
        Err(MvccError::WriteConflict { .. })
    ));
    assert!(matches!(
        lock(b"k", ts(10), ts(30)),
        Err(MvccError::AlreadyRolledBack { .. })
    ));
    s.rollback(b"r", ts(10)).unwrap();
    assert!(matches!(
        lock(b"r", ts(10), ts(10)),
        Err(MvccError::AlreadyRolledBack { .. })
    ));
    // A rollback recorded on another txn's commit at the start ts (the overlapped rollback).
    s.write(b"j", b"v", ts(19), ts(20));
    s.rollback(b"j", ts(20)).unwrap();
    for for_update in [ts(20), ts(30)] {
        assert!(matches!(
            lock(b"j", ts(20), for_update),
            Err(MvccError::AlreadyRolledBack { .. })
        ));
    }
    s.write(b"j", b"v", ts(21), ts(22));
    assert!(matches!(
        lock(b"j", ts(20), ts(30)),
        Err(MvccError::AlreadyRolledBack { .. })
    ));
    // A late request of a txn that committed: its commit ts is above the statement's ts.
    lock(b"m", ts(40), ts(40)).unwrap();
    s.put_locked(b"m", b"v", ts(40), ts(40)).unwrap();
    s.commit(b"m", ts(40), ts(45)).unwrap();
    assert!(matches!(
        lock(b"m", ts(40), ts(41)),
        Err(MvccError::Committed { commit_ts, .. }) if commit_ts == ts(45)
    ));
    // Another txn's rollback after the statement's ts is no conflict.
    s.rollback(b"m", ts(50)).unwrap();
    lock(b"m", ts(46), ts(47)).unwrap();
}

/// The key's lock in the lock CF, as a restarted kv node would find it.
fn stored_lock(s: &Store, key: &[u8]) -> Option<Vec<u8>> {
    s.0.snapshot()
        .get(Cf::Lock, &codec::mvcc::encode_key(key))
        .unwrap()
}

#[test]
fn pessimistic_locks_live_in_memory_until_a_prewrite_replaces_them() {
    let s = Store::new();
    let lock = |key: &[u8], start, for_update| {
        s.run(|txn, r| acquire_pessimistic_lock(txn, r, key, key, start, for_update, 3000))
    };
    lock(b"k", ts(10), ts(10)).unwrap();
    assert_eq!(stored_lock(&s, b"k"), None, "no lock CF write");
    assert!(matches!(
        lock(b"k", ts(11), ts(11)),
        Err(MvccError::KeyIsLocked(_))
    ));
    // A later statement of the txn raises the for_update_ts where the lock is.
    lock(b"k", ts(10), ts(13)).unwrap();
    assert_eq!(s.2.get(b"k").map(|l| l.for_update_ts), Some(ts(13)));
    // GC's Resolve Locks sees it, beside the lock CF's locks.
    s.put(b"a", b"x", b"a", ts(12)).unwrap();
    let in_memory = s.2.scan(b"", b"", ts(20), 10);
    let stored = MvccReader::new(s.0.snapshot())
        .scan_locks(b"", b"", ts(20), 10)
        .unwrap();
    let found = mvcc::pessimistic_locks::merge(in_memory, stored, 10);
    let keys: Vec<&[u8]> = found.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(keys, [&b"a"[..], b"k"]);

    let prewrite_k = |s: &Store| s.put_locked(b"k", b"v", ts(10), ts(13));
    // A kv node that lost its memory (a restart) lost the lock: the prewrite fails.
    let restarted = Store(
        s.0.clone(),
        LockTable::default(),
        Arc::new(PessimisticLocks::new(true, usize::MAX)),
    );
    assert!(matches!(
        prewrite_k(&restarted),
        Err(MvccError::PessimisticLockNotFound { .. })
    ));
    prewrite_k(&s).unwrap();
    assert!(
        stored_lock(&s, b"k").is_some(),
        "the prewrite lock is durable"
    );
    assert_eq!(s.2.stats().0, 0, "and replaced the one in memory");
    s.commit(b"k", ts(10), ts(20)).unwrap();
    assert_eq!(s.get(b"k", ts(25)).unwrap(), v("v"));

    // A rolled-back lock leaves nothing in memory and no lock behind.
    lock(b"r", ts(30), ts(30)).unwrap();
    s.rollback(b"r", ts(30)).unwrap();
    assert_eq!((s.2.stats().0, stored_lock(&s, b"r")), (0, None));
}

#[test]
fn a_full_table_sends_new_pessimistic_locks_to_the_lock_cf_where_they_stay() {
    let s = Store::with_pessimistic_locks(PessimisticLocks::new(true, 0));
    let lock = |for_update| {
        s.run(|txn, r| acquire_pessimistic_lock(txn, r, b"k", b"k", ts(10), for_update, 3000))
    };
    lock(ts(10)).unwrap();
    assert!(stored_lock(&s, b"k").is_some());
    // Room now, yet an update stays in the lock CF: a key's lock lives in one place.
    s.2.configure(true, usize::MAX);
    lock(ts(12)).unwrap();
    assert_eq!(s.2.stats().0, 0);
    assert!(matches!(
        s.run(|txn, r| acquire_pessimistic_lock(txn, r, b"k", b"k", ts(11), ts(11), 3000)),
        Err(MvccError::KeyIsLocked(_))
    ));
    s.rollback(b"k", ts(10)).unwrap();
    assert_eq!(stored_lock(&s, b"k"), None);
}

#[test]
fn a_hand_off_moves_pessimistic_locks_to_the_lock_cf_where_another_leader_finds_them() {
    let s = Store::new();
    let lock = |key: &[u8], start| {
        s.run(|txn, r| acquire_pessimistic_lock(txn, r, key, key, start, start, 3000))
    };
    lock(b"a", ts(10)).unwrap();
    lock(b"b", ts(11)).unwrap();
    s.2.stop_taking_new_locks();
    lock(b"c", ts(12)).unwrap();
    assert!(
        stored_lock(&s, b"c").is_some(),
        "a new lock goes to the lock CF"
    );
    let keys = s.2.keys(10);
    assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()]);
    s.run(|txn, _| {
        for key in &keys {
            txn.persist_pessimistic_lock(key, &s.2.get(key).unwrap());
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(s.2.stats().0, 0, "nothing left in memory");

    // The next leader starts with an empty table and finds every lock in the lock CF.
    let next = Store(
        s.0.clone(),
        LockTable::default(),
        Arc::new(PessimisticLocks::new(true, usize::MAX)),
    );
    for (key, start) in [(b"a", ts(10)), (b"b", ts(11)), (b"c", ts(12))] {
        assert!(matches!(
            next.run(|txn, r| acquire_pessimistic_lock(txn, r, key, key, ts(20), ts(20), 3000)),
            Err(MvccError::KeyIsLocked(_))
        ));
        next.put_locked(key, b"v", start, start).unwrap();
        next.commit(key, start, ts(30)).unwrap();
        assert_eq!(next.get(key, ts(31)).unwrap(), v("v"));
    }
}

#[test]
fn a_pessimistic_txn_checks_a_key_it_did_not_lock_unless_another_lock_covers_it() {
    let s = Store::new();
    // Committed after the txn's start ts 10, before its for_update_ts 16.
    s.write(b"i", b"old", ts(12), ts(15));
    let props = TxnProps {
        for_update_ts: ts(16),
        ..Store::props(b"r", ts(10))
    };
    let put = |value: &[u8], check: KeyCheck| {
        s.run(|txn, r| {
            prewrite(
                txn,
                r,
                &props,
                Mutation::Put(b"i".to_vec(), value.to_vec()),
                check,
            )
        })
    };
    // Neither locked nor covered (say, a blind write): the newer commit is a conflict...
    assert!(matches!(
        put(b"new", KeyCheck::NoNewerWrite),
        Err(MvccError::WriteConflict { .. })
    ));
    // ...while a key the txn's other locks cover (a non-unique index entry) is not checked.
    put(b"new", KeyCheck::Covered).unwrap();
    s.commit(b"i", ts(10), ts(20)).unwrap();
    assert_eq!(s.get(b"i", ts(25)).unwrap(), v("new"));
    // A retried prewrite after the commit changes nothing...
    put(b"new", KeyCheck::Covered).unwrap();
    assert_eq!(s.get(b"i", ts(25)).unwrap(), v("new"));
    // ...and one after the txn was rolled back fails.
    let props = TxnProps {
        for_update_ts: ts(31),
        ..Store::props(b"r", ts(30))
    };
    s.rollback(b"j", ts(30)).unwrap();
    assert!(matches!(
        s.run(|txn, r| prewrite(
            txn,
            r,
            &props,
            Mutation::Delete(b"j".to_vec()),
            KeyCheck::Covered
        )),
        Err(MvccError::AlreadyRolledBack { .. })
    ));
}

#[test]
fn heart_beats_only_raise_the_ttl() {
    let s = Store::new();
    s.put(b"p", b"v", b"p", ts(10)).unwrap();
    assert_eq!(
        s.run(|txn, r| txn_heart_beat(txn, r, b"p", ts(10), 10_000))
            .unwrap(),
        10_000
    );
    assert_eq!(
        s.run(|txn, r| txn_heart_beat(txn, r, b"p", ts(10), 5))
            .unwrap(),
        10_000
    );
    assert!(matches!(
        s.run(|txn, r| txn_heart_beat(txn, r, b"p", ts(99), 5)),
        Err(MvccError::TxnNotFound { .. })
    ));
}

#[test]
fn a_prewrite_keeps_the_longer_ttl_of_the_pessimistic_lock_it_replaces() {
    let s = Store::new();
    s.run(|txn, r| acquire_pessimistic_lock(txn, r, b"k", b"k", ts(10), ts(10), 20_000))
        .unwrap();
    s.run(|txn, r| txn_heart_beat(txn, r, b"k", ts(10), 30_000))
        .unwrap();
    s.put_locked(b"k", b"v", ts(10), ts(10)).unwrap();
    let lock = MvccReader::new(s.0.snapshot())
        .load_lock(b"k")
        .unwrap()
        .expect("prewritten");
    assert_eq!(lock.lock_type, LockType::Put);
    // Not the prewrite's 3 s: a delayed commit must not find its txn rolled back.
    assert_eq!(lock.ttl_ms, 30_000);
}

#[test]
fn corrupt_records_are_errors_that_name_the_key() {
    let s = Store::new();
    let mut wb = s.0.write_batch();
    wb.put(Cf::Lock, &codec::mvcc::encode_key(b"bad"), b"\x01\x02");
    s.0.write(wb, true).unwrap();
    // Written behind the lock table's back, as a damaged disk would: the reader that
    // checks the lock CF and the table's loading at start-up both name the key.
    let err = MvccReader::new(s.0.snapshot())
        .get(b"bad", ts(10), &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("corrupted data in cf lock at key 626164"),
        "{err}"
    );
    let err = LockTable::load(s.0.snapshot())
        .err()
        .expect("corrupt")
        .to_string();
    assert!(
        err.starts_with("corrupted data in cf lock at key 626164"),
        "{err}"
    );
}

trait EmptyCheck {
    fn snapshot_is_empty_of(&self, cf: Cf) -> bool;
}

impl EmptyCheck for MemoryEngine {
    fn snapshot_is_empty_of(&self, cf: Cf) -> bool {
        use engine::{EngineIterator, Iterable};
        let snap = self.snapshot();
        let mut it = snap.iter(cf, engine::IterOptions::default()).unwrap();
        !it.seek_to_first().unwrap()
    }
}

#[test]
fn a_scan_over_thousands_of_keys_skips_deleted_keys_and_stops_at_its_limit() {
    let s = Store::new();
    let n = 2058;
    for i in 0..n {
        let key = format!("k{i:06}").into_bytes();
        s.put(&key, b"v", &key, ts(1)).unwrap();
        s.commit(&key, ts(1), ts(2)).unwrap();
    }
    // Every other key deleted later: listed by the engine, invisible to the scan.
    for i in (0..n).step_by(2) {
        let key = format!("k{i:06}").into_bytes();
        s.prewrite(Mutation::Delete(key.clone()), &key, ts(3))
            .unwrap();
        s.commit(&key, ts(3), ts(4)).unwrap();
    }
    let reader = MvccReader::new(s.0.snapshot());
    let all = reader.scan(b"k", b"l", usize::MAX, ts(5), &[]).unwrap();
    assert_eq!(all.len(), n / 2);
    assert!(all.iter().all(|(k, _)| {
        let i: usize = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
        i % 2 == 1
    }));
    let some = reader.scan(b"k", b"l", 700, ts(5), &[]).unwrap();
    assert_eq!(some[..], all[..700]);
    // Before the deletes, every key is there.
    assert_eq!(
        reader
            .scan(b"k", b"", usize::MAX, ts(2), &[])
            .unwrap()
            .len(),
        n
    );
}

#[test]
fn a_scan_is_blocked_by_a_lock_among_the_keys_it_walks_only() {
    let s = Store::new();
    for i in 0..10 {
        let key = format!("k{i}").into_bytes();
        s.put(&key, b"v", &key, ts(1)).unwrap();
        s.commit(&key, ts(1), ts(2)).unwrap();
    }
    // k5 rewritten by a txn that has not committed; k7 overwritten twice.
    s.put(b"k5", b"new", b"k5", ts(10)).unwrap();
    for (start, commit) in [(3, 4), (5, 6)] {
        s.put(b"k7", format!("v{commit}").as_bytes(), b"k7", ts(start))
            .unwrap();
        s.commit(b"k7", ts(start), ts(commit)).unwrap();
    }
    let reader = MvccReader::new(s.0.snapshot());
    assert!(matches!(
        reader.scan(b"k", b"l", usize::MAX, ts(20), &[]),
        Err(MvccError::KeyIsLocked(_))
    ));
    // Below the lock's txn, or stopping before k5, or with the txn resolved: no block.
    assert_eq!(
        reader
            .scan(b"k", b"l", usize::MAX, ts(9), &[])
            .unwrap()
            .len(),
        10
    );
    assert_eq!(reader.scan(b"k", b"l", 5, ts(20), &[]).unwrap().len(), 5);
    let all = reader
        .scan(b"k", b"l", usize::MAX, ts(20), &[ts(10)])
        .unwrap();
    assert_eq!(all.len(), 10);
    // Each key's newest version at or below the read ts.
    assert_eq!(all[7], (b"k7".to_vec(), b"v6".to_vec()));
    let at_5 = reader.scan(b"k7", b"k8", usize::MAX, ts(5), &[]).unwrap();
    assert_eq!(at_5, vec![(b"k7".to_vec(), b"v4".to_vec())]);
}

#[test]
fn a_scan_cursor_reads_in_batches_what_one_scan_reads_and_checks_each_batchs_locks() {
    let s = Store::new();
    for i in 0..10 {
        let key = format!("k{i}").into_bytes();
        s.put(&key, b"v", &key, ts(1)).unwrap();
        s.commit(&key, ts(1), ts(2)).unwrap();
    }
    // k3 deleted (walked, not returned); k7 locked by a txn that has not committed.
    s.prewrite(Mutation::Delete(b"k3".to_vec()), b"k3", ts(3))
        .unwrap();
    s.commit(b"k3", ts(3), ts(4)).unwrap();
    s.put(b"k7", b"new", b"k7", ts(10)).unwrap();
    let reader = MvccReader::new(s.0.snapshot());
    let whole = reader.scan(b"k", b"l", usize::MAX, ts(9), &[]).unwrap();
    let mut cursor = reader.scan_cursor(b"k", b"l", ts(9), &[]).unwrap();
    let mut batches = Vec::new();
    for limit in [1, 3, 4, 100, 5] {
        batches.push(cursor.next_batch(limit).unwrap());
    }
    let lengths: Vec<usize> = batches.iter().map(Vec::len).collect();
    assert_eq!(lengths, [1, 3, 4, 1, 0]);
    assert_eq!(batches.concat(), whole);
    // Above the lock's start ts, the batches before k7 read; the one that walks k7 fails.
    let mut cursor = reader.scan_cursor(b"k", b"l", ts(20), &[]).unwrap();
    assert_eq!(cursor.next_batch(6).unwrap().len(), 6);
    assert!(matches!(
        cursor.next_batch(6),
        Err(MvccError::KeyIsLocked(_))
    ));
}

#[test]
fn a_scan_reads_a_key_with_many_versions_at_any_ts() {
    let s = Store::new();
    for (i, key) in [b"a", b"b", b"c"].iter().enumerate() {
        s.put(*key, b"v", *key, ts(1)).unwrap();
        s.commit(*key, ts(1), ts(2)).unwrap();
        if i == 1 {
            // b gets eight more versions: a scan above them reads b's latest CF entry, one
            // below its newest walks them.
            for n in 0..8u64 {
                let start = 3 + 2 * n;
                s.put(b"b", format!("b{n}").as_bytes(), b"b", ts(start))
                    .unwrap();
                s.commit(b"b", ts(start), ts(start + 1)).unwrap();
            }
        }
    }
    let reader = MvccReader::new(s.0.snapshot());
    let all = reader.scan(b"", b"", usize::MAX, ts(100), &[]).unwrap();
    let keys: Vec<&[u8]> = all.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(keys, [&b"a"[..], b"b", b"c"]);
    assert_eq!(all[1].1, b"b7");
    // An older read ts lands inside b's history.
    assert_eq!(
        reader.scan(b"b", b"c", usize::MAX, ts(8), &[]).unwrap()[0].1,
        b"b2"
    );
}

#[test]
fn the_lock_table_holds_every_lock_that_can_block_a_read_and_survives_a_restart() {
    let s = Store::new();
    s.write(b"a", b"old", ts(1), ts(2));
    s.write(b"m", b"old", ts(1), ts(2));
    s.put(b"a", b"new", b"a", ts(10)).unwrap();
    // A pessimistic lock blocks no reader, so the table leaves it out.
    s.run(|txn, r| acquire_pessimistic_lock(txn, r, b"m", b"m", ts(11), ts(11), 3000))
        .unwrap();
    assert_eq!(s.1.len(), 1);
    assert!(matches!(
        s.get(b"a", ts(15)),
        Err(MvccError::KeyIsLocked(_))
    ));
    assert!(matches!(
        s.scan(b"", b"", ts(15)),
        Err(MvccError::KeyIsLocked(_))
    ));
    assert_eq!(s.get(b"m", ts(15)).unwrap(), v("old"));
    assert_eq!(
        s.scan(b"b", b"", ts(15)).unwrap().len(),
        1,
        "a range past the lock"
    );
    // After a restart the table is loaded from the lock CF with the same locks.
    let reloaded = LockTable::load(s.0.snapshot()).unwrap();
    assert_eq!(reloaded.len(), 1);
    assert_eq!(reloaded.probe_key(b"a", ts(15)), Probe::MayBlock);
    assert_eq!(reloaded.probe_key(b"m", ts(15)), Probe::Free);
    // The commit takes the lock out; the read sees the new value without the lock CF.
    s.commit(b"a", ts(10), ts(12)).unwrap();
    assert!(s.1.is_empty());
    assert_eq!(s.get(b"a", ts(15)).unwrap(), v("new"));
    assert!(LockTable::load(s.0.snapshot()).unwrap().is_empty());
}

/// A one-phase commit's ts is picked by the kv node, so another txn may have started at it.
/// That txn's rollback flags the commit record instead of overwriting it (TiKV's overlapped
/// rollback): the committed value stays, and the rolled-back txn's late prewrite still
/// fails. A commit at exactly a txn's start ts was visible to its reads: no conflict.
#[test]
fn a_rollback_at_a_one_phase_commit_ts_keeps_the_commit_and_still_stops_the_txn() {
    let s = Store::new();
    s.write(b"k", b"v1", ts(10), ts(20));
    s.rollback(b"k", ts(20)).unwrap();
    assert_eq!(s.get(b"k", ts(20)).unwrap(), v("v1"));
    assert!(matches!(
        s.put(b"k", b"late", b"k", ts(20)),
        Err(MvccError::AlreadyRolledBack { .. })
    ));
    assert!(matches!(
        s.commit(b"k", ts(20), ts(21)),
        Err(MvccError::TxnLockNotFound { .. })
    ));
    s.rollback(b"k", ts(20)).unwrap();
    assert_eq!(
        s.get(b"k", ts(30)).unwrap(),
        v("v1"),
        "rolling back again changes nothing"
    );

    s.write(b"j", b"w1", ts(40), ts(50));
    s.write(b"j", b"w2", ts(50), ts(51));
    assert_eq!(s.get(b"j", ts(51)).unwrap(), v("w2"));

    // A late rollback at an older commit's ts leaves the newer commit the key's value.
    s.write(b"k", b"v2", ts(30), ts(40));
    s.rollback(b"k", ts(20)).unwrap();
    assert_eq!(s.get(b"k", ts(45)).unwrap(), v("v2"));
    assert_eq!(s.get(b"k", ts(35)).unwrap(), v("v1"));
}

/// The key's newest `Put` or `Delete` and its commit ts, from its latest CF entry.
fn latest(s: &Store, key: &[u8]) -> Option<(u64, WriteType)> {
    let entry = MvccReader::new(s.0.snapshot()).load_latest(key).unwrap();
    entry.map(|l| (l.commit_ts, l.write.write_type))
}

/// The latest CF entry follows a key's data commits only: a `Lock` record or a rollback (also
/// a late one at an older commit's ts) leave it as it was. Reads at or above it
/// take their value from it; reads below it find theirs among the versions.
#[test]
fn the_latest_entry_follows_data_commits_only() {
    let s = Store::new();
    assert_eq!(latest(&s, b"k"), None);
    s.write(b"k", b"v1", ts(10), ts(20));
    assert_eq!(latest(&s, b"k"), Some((ts(20), WriteType::Put)));
    s.write(b"k", b"v2", ts(30), ts(40));
    s.rollback(b"k", ts(20)).unwrap();
    s.prewrite(Mutation::Lock(b"k".to_vec()), b"k", ts(50))
        .unwrap();
    s.commit(b"k", ts(50), ts(60)).unwrap();
    s.rollback(b"k", ts(70)).unwrap();
    assert_eq!(latest(&s, b"k"), Some((ts(40), WriteType::Put)));
    s.prewrite(Mutation::Delete(b"k".to_vec()), b"k", ts(80))
        .unwrap();
    s.commit(b"k", ts(80), ts(90)).unwrap();
    assert_eq!(latest(&s, b"k"), Some((ts(90), WriteType::Delete)));
    assert_eq!(s.get(b"k", ts(95)).unwrap(), None);
    assert_eq!(s.scan(b"", b"", ts(95)).unwrap(), vec![]);
    assert_eq!(s.get(b"k", ts(65)).unwrap(), v("v2"));
    assert_eq!(
        s.scan(b"", b"", ts(25)).unwrap(),
        vec![(b"k".to_vec(), b"v1".to_vec())]
    );
}

/// Random histories of puts, deletes, `Lock` records and rollbacks (late ones too, at the
/// ts of an earlier commit): at every ts, `get` and `scan` agree with the answer read off the
/// key's write records alone, the newest `Put` or `Delete` at or below the ts.
#[test]
fn reads_through_the_latest_cf_agree_with_the_write_records() {
    const KEYS: u64 = 6;
    let key = |i: u64| format!("key{i}").into_bytes();
    for seed in 1..=20u64 {
        let s = Store::new();
        let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut below = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut clock = 1;
        let mut commits = Vec::new();
        for _ in 0..60 {
            let i = below(KEYS);
            let k = key(i);
            let (start, commit_ts) = (ts(clock), ts(clock + 1));
            clock += 2;
            let m = match below(4) {
                0 => Mutation::Delete(k.clone()),
                1 => Mutation::Lock(k.clone()),
                _ => Mutation::Put(k.clone(), format!("v{clock}").into_bytes()),
            };
            if below(5) == 0 {
                s.rollback(&k, start).unwrap();
                // A late rollback at a ts where some txn committed.
                if let Some(&(k, c)) = commits.get(below(commits.len() as u64 + 1) as usize) {
                    s.rollback(&key(k), c).unwrap();
                }
                continue;
            }
            s.prewrite(m, &k, start).unwrap();
            s.commit(&k, start, commit_ts).unwrap();
            commits.push((i, commit_ts));
        }
        let reader = MvccReader::new(s.0.snapshot());
        for at in (0..=clock + 1).map(ts) {
            let mut expected = Vec::new();
            for i in 0..KEYS {
                let k = key(i);
                let newest = reader
                    .writes_since(&k, 0)
                    .unwrap()
                    .into_iter()
                    .find(|(c, w)| *c <= at && w.is_data());
                let value = newest
                    .and_then(|(_, w)| w.short_value.filter(|_| w.write_type == WriteType::Put));
                assert_eq!(
                    s.get(&k, at).unwrap(),
                    value,
                    "seed {seed}, key {i}, ts {at}"
                );
                if let Some(value) = value {
                    expected.push((k, value));
                }
            }
            assert_eq!(
                s.scan(b"", b"", at).unwrap(),
                expected,
                "seed {seed}, ts {at}"
            );
        }
    }
}

/// The other order: the txn that started at a ts was rolled back there first, then a
/// one-phase commit lands at that ts. The commit record takes the rollback's place and
/// carries it, so the rolled-back txn's late prewrite still fails.
#[test]
fn a_one_phase_commit_at_a_rolled_back_start_ts_carries_the_rollback() {
    let s = Store::new();
    s.rollback(b"k", ts(20)).unwrap();
    s.run(|txn, r| {
        let m = Mutation::Put(b"k".to_vec(), b"one-pc".to_vec());
        let prewritten = check_prewrite(
            txn,
            r,
            &mut r.write_cursor(),
            &Store::props(b"k", ts(10)),
            m,
            KeyCheck::NoNewerWrite,
        )?;
        let Prewritten::Lock {
            lock,
            over_pessimistic,
            no_write_since_start,
        } = prewritten
        else {
            panic!("a fresh key: {prewritten:?}");
        };
        // The rollback record at 20 is above the start ts: the commit must look at 20.
        assert!(!no_write_since_start);
        commit_one_pc(txn, r, b"k", lock, over_pessimistic, false, ts(20))
    })
    .unwrap();
    assert_eq!(s.get(b"k", ts(20)).unwrap(), v("one-pc"));
    assert!(matches!(
        s.put(b"k", b"late", b"k", ts(20)),
        Err(MvccError::AlreadyRolledBack { .. })
    ));
}
