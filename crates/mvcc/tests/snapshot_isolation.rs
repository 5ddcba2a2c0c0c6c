//! Random interleavings of optimistic transactions, checked against a model of snapshot
//! isolation: every committed txn read exactly the snapshot at its start_ts, no two
//! overlapping committed txns wrote the same key (no lost update), and the final state is the
//! last committed write of each key. Seeded, single-threaded, so a failure replays.

use std::collections::BTreeMap;

use engine::KvEngine;
use engine::memory::MemoryEngine;
use mvcc::actions::commit::commit;
use mvcc::actions::prewrite::{KeyCheck, Mutation, TxnProps, prewrite};
use mvcc::actions::rollback::rollback;
use mvcc::{MvccError, MvccReader, MvccTxn, Result};

const KEYS: u64 = 5;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i}").into_bytes()
}

fn run<T>(
    e: &MemoryEngine,
    f: impl FnOnce(&mut MvccTxn, &MvccReader<engine::memory::MemorySnapshot>) -> Result<T>,
) -> Result<T> {
    let reader = MvccReader::new(e.snapshot());
    let mut txn = MvccTxn::new();
    let out = f(&mut txn, &reader)?;
    let mut wb = e.write_batch();
    txn.fill(&mut wb, None);
    e.write(wb, true).unwrap();
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Read,
    Prewrite,
    CommitPrimary,
    CommitSecondaries,
}

struct Txn {
    start_ts: u64,
    commit_ts: u64,
    reads: Vec<(u64, Option<Vec<u8>>)>,
    writes: Vec<(u64, Vec<u8>)>,
    phase: Phase,
}

#[derive(Default)]
struct Outcome {
    committed: Vec<Txn>,
    aborted: usize,
}

fn simulate(seed: u64, txns: usize) -> (MemoryEngine, Outcome, u64) {
    let e = MemoryEngine::new();
    let mut rng = Rng(seed);
    let mut clock = 1u64;
    let mut active: Vec<Txn> = Vec::new();
    let mut started = 0;
    let mut outcome = Outcome::default();
    while started < txns || !active.is_empty() {
        if started < txns && (active.is_empty() || rng.below(3) == 0) {
            clock += 1;
            started += 1;
            let mut writes: Vec<(u64, Vec<u8>)> = Vec::new();
            for _ in 0..2 {
                let k = rng.below(KEYS);
                if !writes.iter().any(|(w, _)| *w == k) {
                    writes.push((k, format!("v{clock}-{k}").into_bytes()));
                }
            }
            active.push(Txn {
                start_ts: clock,
                commit_ts: 0,
                reads: Vec::new(),
                writes,
                phase: Phase::Read,
            });
            continue;
        }
        let i = rng.below(active.len() as u64) as usize;
        let t = &mut active[i];
        let primary = key(t.writes[0].0);
        let abort = |t: &Txn, upto: usize| {
            for (k, _) in &t.writes[..upto] {
                run(&e, |txn, r| rollback(txn, r, &key(*k), t.start_ts)).unwrap();
            }
        };
        match t.phase {
            Phase::Read => {
                let mut ok = true;
                for _ in 0..2 {
                    let k = rng.below(KEYS);
                    match MvccReader::new(e.snapshot()).get(&key(k), t.start_ts, &[]) {
                        Ok(v) => t.reads.push((k, v)),
                        Err(MvccError::KeyIsLocked(_)) => ok = false,
                        Err(other) => panic!("read failed: {other}"),
                    }
                }
                if ok {
                    t.phase = Phase::Prewrite;
                } else {
                    outcome.aborted += 1;
                    active.swap_remove(i);
                }
            }
            Phase::Prewrite => {
                let props = TxnProps {
                    primary: primary.clone(),
                    start_ts: t.start_ts,
                    ttl_ms: 3000,
                    for_update_ts: 0,
                    txn_size: 2,
                    min_commit_ts: 0,
                };
                let mut done = 0;
                let mut failed = false;
                for (k, v) in &t.writes {
                    match run(&e, |txn, r| {
                        prewrite(
                            txn,
                            r,
                            &props,
                            Mutation::Put(key(*k), v.clone()),
                            KeyCheck::NoNewerWrite,
                        )
                    }) {
                        Ok(()) => done += 1,
                        Err(MvccError::KeyIsLocked(_) | MvccError::WriteConflict { .. }) => {
                            failed = true;
                            break;
                        }
                        Err(other) => panic!("prewrite failed: {other}"),
                    }
                }
                if failed {
                    abort(t, done);
                    outcome.aborted += 1;
                    active.swap_remove(i);
                } else {
                    t.phase = Phase::CommitPrimary;
                }
            }
            Phase::CommitPrimary => {
                clock += 1;
                t.commit_ts = clock;
                run(&e, |txn, r| {
                    commit(txn, r, &primary, t.start_ts, t.commit_ts)
                })
                .unwrap();
                t.phase = Phase::CommitSecondaries;
            }
            Phase::CommitSecondaries => {
                for (k, _) in &t.writes[1..] {
                    run(&e, |txn, r| {
                        commit(txn, r, &key(*k), t.start_ts, t.commit_ts)
                    })
                    .unwrap();
                }
                outcome.committed.push(active.swap_remove(i));
            }
        }
    }
    (e, outcome, clock)
}

#[test]
fn random_interleavings_keep_snapshot_isolation() {
    let (mut commits, mut aborts) = (0, 0);
    for seed in 1..=40u64 {
        let (e, outcome, clock) = simulate(seed * 0x9e37_79b9, 60);
        // The model: every key's committed versions.
        let mut versions: BTreeMap<u64, Vec<(u64, Vec<u8>)>> = BTreeMap::new();
        for t in &outcome.committed {
            for (k, v) in &t.writes {
                versions
                    .entry(*k)
                    .or_default()
                    .push((t.commit_ts, v.clone()));
            }
        }
        let at = |k: u64, ts: u64| -> Option<Vec<u8>> {
            versions
                .get(&k)?
                .iter()
                .filter(|(c, _)| *c <= ts)
                .max_by_key(|(c, _)| *c)
                .map(|(_, v)| v.clone())
        };
        for t in &outcome.committed {
            for (k, seen) in &t.reads {
                assert_eq!(
                    *seen,
                    at(*k, t.start_ts),
                    "seed {seed}: txn {} read key{k}",
                    t.start_ts
                );
            }
        }
        for a in &outcome.committed {
            for b in &outcome.committed {
                let overlap = a.start_ts < b.commit_ts
                    && b.start_ts < a.commit_ts
                    && a.start_ts != b.start_ts;
                let shared = a
                    .writes
                    .iter()
                    .any(|(k, _)| b.writes.iter().any(|(j, _)| j == k));
                assert!(
                    !(overlap && shared),
                    "seed {seed}: lost update between txns {} and {}",
                    a.start_ts,
                    b.start_ts
                );
            }
        }
        let reader = MvccReader::new(e.snapshot());
        for k in 0..KEYS {
            assert_eq!(
                reader.get(&key(k), clock + 1, &[]).unwrap(),
                at(k, clock + 1),
                "seed {seed}: final key{k}"
            );
        }
        commits += outcome.committed.len();
        aborts += outcome.aborted;
    }
    // The run must exercise both outcomes to mean anything.
    assert!(
        commits > 200 && aborts > 100,
        "commits {commits}, aborts {aborts}"
    );
}
