//! The scheduler on an in-memory engine: a bank workload of concurrent transfers (two-phase
//! or one-phase) keeps its total and its snapshots repeatable, busy limits refuse work
//! instead of queueing it, resize changes the workers, and GC keeps exactly what readers at
//! or after the safe point can see.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use engine::memory::MemoryEngine;
use mvcc::actions::prewrite::{Mutation, TxnProps};
use mvcc::{MvccError, MvccReader, MvccTxn, Probe, Write, WriteType};
use txn::gc::GcWorker;
use txn::latches::Latches;
use txn::{
    Command, CommandOutput, Durability, LocalKv, ReplicatedKv, Scheduler, SchedulerConfig, TxnError,
};

const ACCOUNTS: u64 = 5;

fn config(workers: usize) -> SchedulerConfig {
    SchedulerConfig {
        workers,
        latch_slots: 1024,
        pending_write_threshold_bytes: 100 << 20,
    }
}

fn account(i: u64) -> Vec<u8> {
    format!("acct{i}").into_bytes()
}

/// A read as the kv node makes it: probe the lock table (announcing `ts`, waiting out
/// one-phase commits), then read a snapshot.
fn read(
    s: &Scheduler<LocalKv<MemoryEngine>>,
    key: &[u8],
    ts: u64,
) -> Result<Option<u64>, MvccError> {
    let probe = loop {
        match s.kv().lock_table().probe_key(key, ts) {
            Probe::Committing => std::thread::yield_now(),
            probe => break probe,
        }
    };
    let reader = MvccReader::after_lock_probe(s.kv().snapshot().unwrap(), probe == Probe::Free);
    Ok(reader
        .get(key, ts, &[])?
        .map(|v| String::from_utf8(v).unwrap().parse().unwrap()))
}

/// One optimistic transfer, committed in one phase or two; false if it conflicted.
fn transfer(
    s: &Scheduler<LocalKv<MemoryEngine>>,
    clock: &AtomicU64,
    from: u64,
    to: u64,
    one_pc: bool,
) -> bool {
    let start_ts = clock.fetch_add(1, Ordering::SeqCst);
    let (Ok(Some(a)), Ok(Some(b))) = (
        read(s, &account(from), start_ts),
        read(s, &account(to), start_ts),
    ) else {
        return false;
    };
    if a == 0 {
        return false;
    }
    let props = TxnProps {
        primary: account(from),
        start_ts,
        ttl_ms: 3000,
        for_update_ts: 0,
        txn_size: 2,
        min_commit_ts: 0,
    };
    let mutations = vec![
        Mutation::Put(account(from), (a - 1).to_string().into_bytes()),
        Mutation::Put(account(to), (b + 1).to_string().into_bytes()),
    ];
    let keys = vec![account(from), account(to)];
    match s.run(Command::Prewrite {
        mutations,
        props,
        pessimistic: vec![],
        covered: vec![],
        try_one_pc: one_pc,
    }) {
        Ok(CommandOutput::Committed(commit_ts)) if one_pc => {
            assert!(commit_ts > start_ts);
            return true;
        }
        Ok(CommandOutput::Done) if !one_pc => {}
        Ok(other) => panic!("prewrite answered {other:?}"),
        Err(TxnError::Mvcc(MvccError::KeyIsLocked(_))) if one_pc => return false,
        Err(TxnError::Mvcc(MvccError::WriteConflict { .. } | MvccError::KeyIsLocked(_))) => {
            s.run(Command::Rollback { keys, start_ts }).unwrap();
            return false;
        }
        Err(e) => panic!("prewrite: {e}"),
    }
    let commit_ts = clock.fetch_add(1, Ordering::SeqCst);
    s.run(Command::Commit {
        keys,
        start_ts,
        commit_ts,
    })
    .unwrap();
    true
}

#[test]
fn concurrent_transfers_keep_the_total() {
    bank(false);
}

#[test]
fn concurrent_one_phase_transfers_keep_the_total_and_snapshots_repeatable() {
    bank(true);
}

fn bank(one_pc: bool) {
    let s = Arc::new(Scheduler::new(
        LocalKv::open(MemoryEngine::new()).expect("the lock CF loads"),
        config(2),
    ));
    let clock = Arc::new(AtomicU64::new(10));
    // As the kv node does at start: max_ts from the oracle, then one-phase commit may run.
    s.kv()
        .lock_table()
        .sync_max_ts(clock.load(Ordering::SeqCst));
    for i in 0..ACCOUNTS {
        let start_ts = clock.fetch_add(1, Ordering::SeqCst);
        let props = TxnProps {
            primary: account(i),
            start_ts,
            ttl_ms: 3000,
            for_update_ts: 0,
            txn_size: 1,
            min_commit_ts: 0,
        };
        s.run(Command::Prewrite {
            mutations: vec![Mutation::Put(account(i), b"100".to_vec())],
            props,
            pessimistic: vec![],
            covered: vec![],
            try_one_pc: false,
        })
        .unwrap();
        let commit_ts = clock.fetch_add(1, Ordering::SeqCst);
        s.run(Command::Commit {
            keys: vec![account(i)],
            start_ts,
            commit_ts,
        })
        .unwrap();
    }
    let committed = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let (s, clock, committed) = (s.clone(), clock.clone(), committed.clone());
            std::thread::spawn(move || {
                let mut x = t + 1;
                for _ in 0..200 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let from = (x >> 33) % ACCOUNTS;
                    let to = (from + 1 + (x >> 40) % (ACCOUNTS - 1)) % ACCOUNTS;
                    if transfer(&s, &clock, from, to, one_pc) {
                        committed.fetch_add(1, Ordering::Relaxed);
                    }
                    // Full reads at a snapshot never see a partial transfer, and reading
                    // the snapshot again (after other commits) finds the same balances.
                    let ts = clock.fetch_add(1, Ordering::SeqCst);
                    let balances = || -> Result<Vec<_>, _> {
                        (0..ACCOUNTS).map(|i| read(&s, &account(i), ts)).collect()
                    };
                    if let Ok(b) = balances() {
                        assert_eq!(b.iter().map(|v| v.unwrap()).sum::<u64>(), ACCOUNTS * 100);
                        std::thread::yield_now();
                        if let Ok(again) = balances() {
                            assert_eq!(again, b, "the snapshot at {ts} changed");
                        }
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let ts = clock.fetch_add(1, Ordering::SeqCst);
    let total: u64 = (0..ACCOUNTS)
        .map(|i| read(&s, &account(i), ts).unwrap().unwrap())
        .sum();
    assert_eq!(total, ACCOUNTS * 100);
    assert!(
        committed.load(Ordering::Relaxed) > 50,
        "too few transfers committed"
    );
}

#[test]
fn pending_writes_beyond_the_threshold_are_refused() {
    let s = Scheduler::new(
        LocalKv::open(MemoryEngine::new()).expect("the lock CF loads"),
        SchedulerConfig {
            pending_write_threshold_bytes: 1000,
            ..config(1)
        },
    );
    // One command is always admitted, however large; a second while it is pending is not.
    let big = |start_ts: u64| Command::Prewrite {
        mutations: (0..20)
            .map(|i| Mutation::Put(format!("k{start_ts}-{i}").into_bytes(), vec![0; 200]))
            .collect(),
        props: TxnProps {
            primary: b"k".to_vec(),
            start_ts,
            ttl_ms: 3000,
            for_update_ts: 0,
            txn_size: 20,
            min_commit_ts: 0,
        },
        pessimistic: vec![],
        covered: vec![],
        try_one_pc: false,
    };
    let mut refused = 0;
    let mut receivers = Vec::new();
    for i in 0..50 {
        let (tx, rx) = std::sync::mpsc::channel();
        let reply = Box::new(move |r| {
            let _ = tx.send(r);
        });
        match s.schedule(big(100 + i), reply) {
            Ok(()) => receivers.push(rx),
            Err(TxnError::Busy(why)) => {
                assert!(
                    why.contains("storage.scheduler-pending-write-threshold"),
                    "{why}"
                );
                refused += 1;
            }
            Err(e) => panic!("{e}"),
        }
    }
    for rx in receivers {
        rx.recv().unwrap().unwrap();
    }
    assert!(refused > 0, "nothing was refused");
    s.run(big(1)).unwrap();
}

#[test]
fn a_closed_write_gate_refuses_writes_but_not_cleanup() {
    struct Stalled;
    impl txn::WriteGate for Stalled {
        fn check(&self) -> Result<(), String> {
            Err("write stall: 25 L0 files".into())
        }
    }
    let s = Scheduler::new(
        LocalKv::open(MemoryEngine::new()).expect("the lock CF loads"),
        config(1),
    );
    s.set_write_gate(Arc::new(Stalled));
    let err = s
        .run(Command::Commit {
            keys: vec![b"k".to_vec()],
            start_ts: 1,
            commit_ts: 2,
        })
        .unwrap_err();
    assert!(
        matches!(err, TxnError::Busy(ref why) if why.contains("L0 files")),
        "{err}"
    );
    // Rollbacks and lock resolution still go through: they free what blocks others.
    s.run(Command::Rollback {
        keys: vec![b"k".to_vec()],
        start_ts: 1,
    })
    .unwrap();
}

#[test]
fn a_small_pessimistic_lock_runs_on_the_callers_thread_when_nothing_can_block_it() {
    let s = Scheduler::new(
        LocalKv::open(MemoryEngine::new()).expect("the lock CF loads"),
        config(1),
    );
    let lock = |key: &[u8], start_ts| Command::AcquirePessimisticLock {
        keys: vec![key.to_vec()],
        primary: key.to_vec(),
        start_ts,
        for_update_ts: start_ts,
        ttl_ms: 3000,
        return_values: false,
    };
    // The result of running it here, None if handed back.
    let run_here = |command: Command, max_keys: usize| {
        let (tx, rx) = std::sync::mpsc::channel();
        let reply = Box::new(move |r| {
            let _ = tx.send(r);
        });
        match s.try_run_here(command, max_keys, reply) {
            Ok(()) => Some(rx.recv().expect("answered")),
            Err(_) => None,
        }
    };
    let handed_back = |r: Option<_>| r.is_none();
    {
        let latches = s.latches();
        let _held = latches.acquire([b"k".as_slice()]);
        assert!(handed_back(run_here(lock(b"k", 10), 16)), "latch held");
    }
    assert!(handed_back(run_here(lock(b"k", 10), 0)), "too many keys");
    let rollback = Command::Rollback {
        keys: vec![b"k".to_vec()],
        start_ts: 10,
    };
    assert!(handed_back(run_here(rollback, 16)), "not a lock request");
    s.kv().pessimistic_locks().configure(false, usize::MAX);
    assert!(
        handed_back(run_here(lock(b"k", 10), 16)),
        "locks go to disk"
    );

    s.kv().pessimistic_locks().configure(true, usize::MAX);
    assert!(matches!(
        run_here(lock(b"k", 10), 16),
        Some(Ok(CommandOutput::Done))
    ));
    assert_eq!(s.kv().pessimistic_locks().stats().0, 1);
    assert!(matches!(
        run_here(lock(b"k", 11), 16),
        Some(Err(TxnError::Mvcc(MvccError::KeyIsLocked(_))))
    ));
}

#[test]
fn a_lock_request_run_here_is_refused_while_pending_writes_pass_the_threshold() {
    let s = Scheduler::new(
        LocalKv::open(MemoryEngine::new()).expect("the lock CF loads"),
        SchedulerConfig {
            pending_write_threshold_bytes: 1,
            ..config(1)
        },
    );
    s.kv().pessimistic_locks().configure(true, usize::MAX);
    let lock = Command::AcquirePessimisticLock {
        keys: vec![b"y".to_vec()],
        primary: b"y".to_vec(),
        start_ts: 20,
        for_update_ts: 20,
        ttl_ms: 3000,
        return_values: false,
    };
    let answer = |command: Command| {
        let (tx, rx) = std::sync::mpsc::channel();
        let reply = Box::new(move |r| {
            let _ = tx.send(r);
        });
        assert!(s.try_run_here(command, 16, reply).is_ok(), "runs here");
        rx.recv().expect("answered")
    };
    // A prewrite queued behind a held latch stays pending.
    let latches = s.latches();
    let held = latches.acquire([b"x".as_slice()]);
    let (tx, prewritten) = std::sync::mpsc::channel();
    let prewrite = Command::Prewrite {
        mutations: vec![Mutation::Put(b"x".to_vec(), vec![0; 100])],
        props: TxnProps {
            primary: b"x".to_vec(),
            start_ts: 10,
            ttl_ms: 3000,
            for_update_ts: 0,
            txn_size: 1,
            min_commit_ts: 0,
        },
        pessimistic: vec![],
        covered: vec![],
        try_one_pc: false,
    };
    s.schedule(
        prewrite,
        Box::new(move |r| {
            let _ = tx.send(r);
        }),
    )
    .unwrap();
    match answer(lock.clone()) {
        Err(TxnError::Busy(why)) => {
            assert!(why.contains("scheduler-pending-write-threshold"), "{why}")
        }
        other => panic!("a lock admitted past the threshold: {other:?}"),
    }
    drop(held);
    prewritten.recv().unwrap().unwrap();
    assert!(matches!(answer(lock), Ok(CommandOutput::Done)));
}

#[test]
fn resize_changes_the_worker_count() {
    let s = Scheduler::new(
        LocalKv::open(MemoryEngine::new()).expect("the lock CF loads"),
        config(1),
    );
    s.resize(3);
    assert_eq!(s.workers(), 3);
    s.resize(1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while s.workers() != 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "workers did not leave"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    s.run(Command::Rollback {
        keys: vec![b"x".to_vec()],
        start_ts: 5,
    })
    .unwrap();
}

#[test]
fn gc_keeps_what_readers_at_or_after_the_safe_point_see_and_drops_the_rest() {
    let kv = LocalKv::open(MemoryEngine::new()).expect("the lock CF loads");
    let s = Scheduler::new(kv.clone(), config(1));
    let mut ts = 10;
    let mut write = |key: &[u8], value: Option<&[u8]>| {
        let start_ts = ts;
        let m = match value {
            Some(v) => Mutation::Put(key.to_vec(), v.to_vec()),
            None => Mutation::Delete(key.to_vec()),
        };
        let props = TxnProps {
            primary: key.to_vec(),
            start_ts,
            ttl_ms: 3000,
            for_update_ts: 0,
            txn_size: 1,
            min_commit_ts: 0,
        };
        s.run(Command::Prewrite {
            mutations: vec![m],
            props,
            pessimistic: vec![],
            covered: vec![],
            try_one_pc: false,
        })
        .unwrap();
        s.run(Command::Commit {
            keys: vec![key.to_vec()],
            start_ts,
            commit_ts: start_ts + 1,
        })
        .unwrap();
        ts += 10;
    };
    let big = vec![1u8; 1000];
    for round in 0..5u8 {
        let small = [round];
        write(b"a", Some(&small));
        write(b"b", Some(&big));
        write(b"c", if round % 2 == 0 { Some(&small) } else { None });
    }
    s.run(Command::Rollback {
        keys: vec![b"a".to_vec()],
        start_ts: 500,
    })
    .unwrap();
    let safe_point = 95;
    let probes: Vec<u64> = (safe_point..ts + 5).collect();
    let before: Vec<_> = {
        let r = MvccReader::new(kv.snapshot().unwrap());
        probes
            .iter()
            .flat_map(|&t| [b"a", b"b", b"c"].map(|k| r.get(k, t, &[]).unwrap()))
            .collect()
    };
    let gc = GcWorker::new(kv.clone(), Arc::new(Latches::new(1)), 2, 0);
    gc.gc_range(safe_point, b"", b"").unwrap();
    let r = MvccReader::new(kv.snapshot().unwrap());
    let after: Vec<_> = probes
        .iter()
        .flat_map(|&t| [b"a", b"b", b"c"].map(|k| r.get(k, t, &[]).unwrap()))
        .collect();
    assert_eq!(before, after, "a read at or after the safe point changed");
    // Commits: a at 11, 41, 71, 101, 131 (+ a rollback at 500); b at 21, 51, 81, 111, 141;
    // c put 31, delete 61, put 91, delete 121, put 151. Each keeps its newest version at or
    // below 95 and everything above.
    for (key, left) in [(b"a", 4), (b"b", 3), (b"c", 3)] {
        let versions = r.writes_since(key, 0).unwrap();
        let at_or_below: Vec<_> = versions.iter().filter(|(c, _)| *c <= safe_point).collect();
        assert!(at_or_below.len() <= 1, "{key:?}: {versions:?}");
        assert_eq!(versions.len(), left, "{key:?}: {versions:?}");
    }
    assert_eq!(gc.stats().versions_deleted, 6, "{:?}", gc.stats());
    assert!(gc.stats().bytes_written > 0);
    // b's large values of the dropped versions left the default CF too.
    assert!(r.load_value(b"b", 20).is_err() && r.load_value(b"b", 80).is_ok());
}

/// A committed put or delete of `key` at `commit_ts`, written as a commit writes it.
fn commit_directly(kv: &LocalKv<MemoryEngine>, key: &[u8], value: Option<&[u8]>, commit_ts: u64) {
    let mut txn = MvccTxn::new();
    let write = Write {
        write_type: if value.is_some() {
            WriteType::Put
        } else {
            WriteType::Delete
        },
        start_ts: commit_ts - 1,
        short_value: value.map(<[u8]>::to_vec),
        overlapped_rollback: false,
    };
    txn.commit_write(key, commit_ts, write);
    kv.write(txn, Durability::Synced).unwrap();
}

/// A key deleted at or below the safe point loses its latest CF entry with its versions; one
/// written again above the safe point keeps its entry; and a commit that lands while GC is
/// about to drop an entry (between GC's read and its delete) keeps it: GC looks again under
/// the latches commits hold.
#[test]
fn gc_drops_the_latest_entry_of_a_deleted_key_unless_a_commit_replaced_it() {
    let kv = LocalKv::open(MemoryEngine::new()).expect("the lock CF loads");
    let s = Scheduler::new(kv.clone(), config(1));
    for key in [&b"d"[..], b"e", b"f"] {
        commit_directly(&kv, key, Some(b"v"), 11);
        commit_directly(&kv, key, None, 21);
    }
    commit_directly(&kv, b"e", Some(b"again"), 101);
    let safe_point = 95;
    let gc = Arc::new(GcWorker::new(kv.clone(), s.latches(), 10, 0));
    // Hold f's latch as a commit would, until GC has read f and waits for it.
    let latches = s.latches();
    let held = latches.acquire([&b"f"[..]]);
    let worker = {
        let gc = gc.clone();
        std::thread::spawn(move || gc.gc_range(safe_point, b"", b"").unwrap())
    };
    while gc.stats().keys_scanned == 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    commit_directly(&kv, b"f", Some(b"late"), 111);
    drop(held);
    worker.join().unwrap();

    let r = MvccReader::new(kv.snapshot().unwrap());
    assert_eq!(r.load_latest(b"d").unwrap(), None);
    assert!(r.writes_since(b"d", 0).unwrap().is_empty());
    for (key, commit_ts, value) in [(&b"e"[..], 101, &b"again"[..]), (b"f", 111, b"late")] {
        let latest = r
            .load_latest(key)
            .unwrap()
            .expect("a put above the safe point");
        assert_eq!(latest.commit_ts, commit_ts);
        assert_eq!(r.get(key, u64::MAX, &[]).unwrap().as_deref(), Some(value));
    }
}

/// A covered key (a non-unique index entry under its row's lock) skips the newer-write
/// check, so a writer that never locked the row (an ADD INDEX backfill) may commit it after
/// the txn's for_update_ts. A one-phase commit ts could land below that commit: the txn
/// prewrites instead, and its commit at a later PD ts is the key's newest, in the write
/// records and in the latest CF alike.
#[test]
fn a_covered_key_committed_after_the_for_update_ts_turns_one_phase_commit_into_prewrite() {
    let kv = LocalKv::open(MemoryEngine::new()).expect("the lock CF loads");
    kv.lock_table().sync_max_ts(50);
    let s = Scheduler::new(kv.clone(), config(1));
    commit_directly(&kv, b"i", Some(b"backfill"), 120);
    let prewrite = |start_ts, for_update_ts| Command::Prewrite {
        mutations: vec![Mutation::Delete(b"i".to_vec())],
        props: TxnProps {
            primary: b"row".to_vec(),
            start_ts,
            ttl_ms: 3000,
            for_update_ts,
            txn_size: 1,
            min_commit_ts: 0,
        },
        pessimistic: vec![false],
        covered: vec![true],
        try_one_pc: true,
    };
    let out = s.run(prewrite(90, 100)).unwrap();
    assert!(matches!(out, CommandOutput::Done), "{out:?}");
    s.run(Command::Commit {
        keys: vec![b"i".to_vec()],
        start_ts: 90,
        commit_ts: 130,
    })
    .unwrap();
    let r = MvccReader::new(kv.snapshot().unwrap());
    let newest = r.load_latest(b"i").unwrap().unwrap();
    assert_eq!(
        (newest.commit_ts, newest.write.write_type),
        (130, WriteType::Delete)
    );
    assert_eq!(r.get(b"i", u64::MAX, &[]).unwrap(), None);
    // With the key's newest commit below the for_update_ts, one-phase commit goes ahead.
    let out = s.run(prewrite(140, 150)).unwrap();
    assert!(
        matches!(out, CommandOutput::Committed(ts) if ts > 150),
        "{out:?}"
    );
}
