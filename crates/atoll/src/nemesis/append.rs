//! Elle's list-append workload. Each row of `jepsen.append` holds a list of numbers (`v`, comma
//! separated) under a key `k`; a transaction does one to [`MAX_MOPS`] micro-operations, each
//! a read of a key's list or an append of a number no one appended before
//! (`INSERT ... ON DUPLICATE KEY UPDATE v = CONCAT(v, ...)`). Since every appended number is
//! unique and lists only grow, the reads tell each key's version order, and with it which
//! transaction depended on which ([`super::cycles`] finds the cycles and names them).
//!
//! A few keys are in use at a time ([`ACTIVE_KEYS`]); a key takes at most
//! [`MAX_APPENDS_PER_KEY`] appends and is then replaced by a fresh one, so lists stay short
//! and every key's order is seen by many reads (Elle's `max-writes-per-key`).
//!
//! The model depends on the transaction mode ([`allowed`]). Pessimistic transactions
//! (TiDB's default) read with `FOR UPDATE`, so every read and write holds its key's lock
//! until the commit: no cycle at all may appear. Optimistic transactions read their
//! snapshot and promise snapshot isolation: G2-item (write skew) is allowed, nothing else.
//! Pessimistic transactions with plain reads, at REPEATABLE READ (as InnoDB's) or READ
//! COMMITTED, read a snapshot but append to the latest version under a lock, so a read
//! followed by an append may also show G-single and lost update; G0 and G1 stay forbidden
//! (Adya's PL-2).

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::Rng;
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};

use super::client::{Failure, Op, Outcome, mysql};
use super::cycles::{self, Mop, Txn};
use super::{Attempt, TxnMode, Workload};

/// Keys in use at a time.
const ACTIVE_KEYS: usize = 5;
/// Appends a key takes before a fresh key replaces it.
const MAX_APPENDS_PER_KEY: u32 = 16;
/// Micro-operations per transaction, at most.
const MAX_MOPS: usize = 4;

const SETUP: &str = "CREATE DATABASE IF NOT EXISTS jepsen; \
     CREATE TABLE IF NOT EXISTS jepsen.append (k BIGINT PRIMARY KEY, v TEXT NOT NULL)";

pub struct Append {
    mode: TxnMode,
    keys: Mutex<KeyPool>,
    next_value: AtomicU64,
}

/// The keys in use, with the appends each has been given.
struct KeyPool {
    active: Vec<(u64, u32)>,
    next_key: u64,
}

impl KeyPool {
    fn read_key(&self, rng: &mut StdRng) -> u64 {
        self.active[rng.random_range(0..self.active.len())].0
    }

    fn append_key(&mut self, rng: &mut StdRng) -> u64 {
        let slot = rng.random_range(0..self.active.len());
        let (key, appends) = &mut self.active[slot];
        let chosen = *key;
        *appends += 1;
        if *appends == MAX_APPENDS_PER_KEY {
            self.active[slot] = (self.next_key, 0);
            self.next_key += 1;
        }
        chosen
    }
}

/// A transaction's micro-operations as the history keeps them (JSON).
#[derive(Serialize, Deserialize)]
struct Recorded(Vec<Mop>);

impl Append {
    pub fn new(mode: TxnMode) -> Append {
        Append {
            mode,
            keys: Mutex::new(KeyPool {
                active: (0..ACTIVE_KEYS as u64).map(|k| (k, 0)).collect(),
                next_key: ACTIVE_KEYS as u64,
            }),
            next_value: AtomicU64::new(1),
        }
    }

    /// A random transaction; every key is read at most once, so each read's row is found
    /// in the output by its key.
    fn transaction(&self, rng: &mut StdRng) -> Vec<Mop> {
        let mut keys = self.keys.lock().expect("key pool lock");
        let mut mops = Vec::new();
        for _ in 0..rng.random_range(1..=MAX_MOPS) {
            let key = keys.read_key(rng);
            let read_before = mops
                .iter()
                .any(|m| matches!(m, Mop::Read(k, _) if *k == key));
            if rng.random_bool(0.5) && !read_before {
                mops.push(Mop::Read(key, None));
            } else {
                let key = keys.append_key(rng);
                let value = self.next_value.fetch_add(1, Ordering::Relaxed);
                mops.push(Mop::Append(key, value));
            }
        }
        mops
    }

    fn statements(&self, mops: &[Mop]) -> String {
        let lock = self.mode.read_suffix();
        let mut sql = self.mode.begin().to_string();
        for mop in mops {
            sql.push(' ');
            sql.push_str(&match mop {
                Mop::Read(k, _) => format!("SELECT k, v FROM jepsen.append WHERE k = {k}{lock};"),
                Mop::Append(k, v) => format!(
                    "INSERT INTO jepsen.append (k, v) VALUES ({k}, '{v}') \
                     ON DUPLICATE KEY UPDATE v = CONCAT(v, ',{v}');"
                ),
            });
        }
        sql.push_str(" COMMIT");
        sql
    }
}

/// The lists in a `SELECT k, v` answer, by key.
fn lists(answer: &str) -> Result<HashMap<u64, Vec<u64>>, String> {
    let mut out = HashMap::new();
    for line in answer.lines() {
        let (k, v) = line
            .split_once('\t')
            .ok_or_else(|| format!("not a row of k and v: {line:?}"))?;
        let key = k
            .trim()
            .parse()
            .map_err(|_| format!("bad key in {line:?}"))?;
        let list = v
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.trim().parse())
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|_| format!("bad list in {line:?}"))?;
        out.insert(key, list);
    }
    Ok(out)
}

impl Workload for Append {
    fn name(&self) -> &'static str {
        "append"
    }

    fn setup(&self) -> String {
        SETUP.to_string()
    }

    fn operation(&self, rng: &mut StdRng, sql_node: &str) -> Attempt {
        let mut mops = self.transaction(rng);
        let result = mysql(sql_node, &self.statements(&mops)).and_then(|answer| {
            let found = lists(&answer).map_err(|e| (Outcome::Unknown, e))?;
            for mop in &mut mops {
                if let Mop::Read(k, list) = mop {
                    *list = Some(found.get(k).cloned().unwrap_or_default());
                }
            }
            Ok(())
        });
        Attempt {
            kind: "txn",
            value: serde_json::to_string(&Recorded(mops)).expect("micro-operations serialize"),
            result,
        }
    }

    fn final_read(&self, sql_node: &str) -> Result<String, Failure> {
        mysql(sql_node, "SELECT k, v FROM jepsen.append ORDER BY k")
    }

    fn split(&self, rng: &mut StdRng) -> Option<String> {
        let keys = self.keys.lock().expect("key pool lock");
        let at: std::collections::BTreeSet<u64> = (0..2).map(|_| keys.read_key(rng)).collect();
        let at: Vec<String> = at.iter().map(|k| format!("({k})")).collect();
        Some(format!("SPLIT TABLE jepsen.append BY {}", at.join(", ")))
    }

    fn check(&self, history: &[&Op], final_reads: &[(String, String)]) -> Vec<String> {
        let mut txns = Vec::new();
        let mut unreadable = Vec::new();
        for op in history {
            match serde_json::from_str::<Recorded>(&op.value) {
                Ok(Recorded(mops)) => txns.push(Txn {
                    name: format!("client {} at {} ms", op.client, op.start_ms),
                    outcome: op.outcome,
                    mops,
                }),
                Err(e) => unreadable.push(format!("append: unreadable history entry: {e}")),
            }
        }
        let mut finals = Vec::new();
        for (node, answer) in final_reads {
            match lists(answer) {
                Ok(found) => finals.push((node.as_str(), found)),
                Err(e) => unreadable.push(format!("append: final read on {node}: {e}")),
            }
        }
        unreadable.extend(lost_appends(&txns, &finals));
        for (node, found) in finals {
            txns.push(Txn {
                name: format!("final read on {node}"),
                outcome: Outcome::Ok,
                mops: found
                    .into_iter()
                    .map(|(k, list)| Mop::Read(k, Some(list)))
                    .collect(),
            });
        }
        let allowed = allowed(self.mode);
        let mut out = unreadable;
        let mut allowed_seen: HashMap<&str, (usize, String)> = HashMap::new();
        for anomaly in cycles::check(&txns) {
            if allowed.contains(&anomaly.kind) {
                allowed_seen
                    .entry(anomaly.kind)
                    .or_insert((0, anomaly.detail))
                    .0 += 1;
            } else {
                out.push(format!("append: {}: {}", anomaly.kind, anomaly.detail));
            }
        }
        for (kind, (count, example)) in allowed_seen {
            println!(
                "nemesis: append: {count} x {kind}, which {:?} transactions allow; one: {example}",
                self.mode
            );
        }
        out
    }
}

/// The anomalies `mode` allows (every other one is a bug).
fn allowed(mode: TxnMode) -> &'static [&'static str] {
    match mode {
        TxnMode::Pessimistic => &[],
        TxnMode::Optimistic => &["G2-item"],
        // A cycle whose G-single search was cut short is one of the two allowed kinds.
        TxnMode::RepeatableRead | TxnMode::ReadCommitted => {
            &["G-single", "G2-item", "lost-update", "cycle-unclassified"]
        }
    }
}

/// Appends that were acknowledged, or seen by a successful read, but that a final read
/// lacks (the list-append checker alone would take the shorter list for an earlier version).
fn lost_appends(txns: &[Txn], finals: &[(&str, HashMap<u64, Vec<u64>>)]) -> Vec<String> {
    let mut durable: HashMap<u64, BTreeSet<u64>> = HashMap::new();
    for txn in txns.iter().filter(|t| t.outcome == Outcome::Ok) {
        for mop in &txn.mops {
            match mop {
                Mop::Append(k, v) => {
                    durable.entry(*k).or_default().insert(*v);
                }
                Mop::Read(k, Some(list)) => durable.entry(*k).or_default().extend(list),
                Mop::Read(_, None) => {}
            }
        }
    }
    let mut keys: Vec<_> = durable.iter().collect();
    keys.sort_unstable_by_key(|(k, _)| **k);
    let mut out = Vec::new();
    for (node, found) in finals {
        for &(key, values) in &keys {
            let have: BTreeSet<u64> = found.get(key).into_iter().flatten().copied().collect();
            let lost: Vec<&u64> = values.difference(&have).collect();
            if !lost.is_empty() {
                out.push(format!(
                    "append: lost-append: the final read on {node} misses {lost:?} of key {key}, acknowledged or read before"
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn transactions_read_a_key_once_and_append_unique_values_to_few_keys() {
        let append = Append::new(TxnMode::Pessimistic);
        let mut rng = StdRng::seed_from_u64(3);
        let mut values = std::collections::HashSet::new();
        let mut appends_per_key: HashMap<u64, u32> = HashMap::new();
        for _ in 0..500 {
            let mops = append.transaction(&mut rng);
            assert!((1..=MAX_MOPS).contains(&mops.len()));
            let mut read = std::collections::HashSet::new();
            for mop in mops {
                match mop {
                    Mop::Read(k, _) => assert!(read.insert(k), "key {k} read twice"),
                    Mop::Append(k, v) => {
                        assert!(values.insert(v), "value {v} appended twice");
                        *appends_per_key.entry(k).or_default() += 1;
                    }
                }
            }
        }
        assert!(appends_per_key.values().all(|&n| n <= MAX_APPENDS_PER_KEY));
        assert!(appends_per_key.len() > ACTIVE_KEYS, "keys are replaced");
    }

    #[test]
    fn a_final_read_must_hold_every_acknowledged_or_seen_append() {
        let txn = |outcome, mops| Txn {
            name: String::new(),
            outcome,
            mops,
        };
        let txns = [
            txn(Outcome::Ok, vec![Mop::Append(1, 1)]),
            txn(Outcome::Unknown, vec![Mop::Append(1, 2)]),
            txn(Outcome::Ok, vec![Mop::Read(1, Some(vec![1, 2]))]),
            txn(Outcome::Unknown, vec![Mop::Append(2, 3)]),
            txn(Outcome::Fail, vec![Mop::Append(2, 4)]),
        ];
        let whole = HashMap::from([(1, vec![1, 2])]);
        assert!(lost_appends(&txns, &[("n", whole)]).is_empty());
        let short = HashMap::from([(1, vec![1])]);
        let lost = lost_appends(&txns, &[("n", short)]);
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert!(lost[0].contains("misses [2] of key 1"), "{lost:?}");
    }

    #[test]
    fn each_mode_allows_its_anomalies_and_no_other() {
        let txn = |mops: &[Mop], at| {
            let value = serde_json::to_string(&Recorded(mops.to_vec())).unwrap();
            Op::test("append", "txn", &value, Outcome::Ok, at, at + 1)
        };
        // Two transactions read key 1 empty and both append to it: a lost update.
        let lost_update = [
            txn(&[Mop::Read(1, Some(vec![])), Mop::Append(1, 1)], 0),
            txn(&[Mop::Read(1, Some(vec![])), Mop::Append(1, 2)], 0),
        ];
        // Each reads what the other appended: G1c.
        let g1c = [
            txn(&[Mop::Append(1, 1), Mop::Read(2, Some(vec![2]))], 0),
            txn(&[Mop::Append(2, 2), Mop::Read(1, Some(vec![1]))], 0),
        ];
        let found = |mode, ops: &[Op], last: &str| {
            let history: Vec<&Op> = ops.iter().collect();
            Append::new(mode).check(&history, &[("n".to_string(), last.to_string())])
        };
        for mode in [TxnMode::RepeatableRead, TxnMode::ReadCommitted] {
            assert_eq!(found(mode, &lost_update, "1\t1,2"), Vec::<String>::new());
        }
        for mode in [TxnMode::Pessimistic, TxnMode::Optimistic] {
            let anomalies = found(mode, &lost_update, "1\t1,2");
            assert!(
                anomalies.iter().any(|a| a.contains("lost-update")),
                "{anomalies:?}"
            );
        }
        for mode in [
            TxnMode::Pessimistic,
            TxnMode::RepeatableRead,
            TxnMode::ReadCommitted,
            TxnMode::Optimistic,
        ] {
            let anomalies = found(mode, &g1c, "1\t1\n2\t2");
            assert!(anomalies.iter().any(|a| a.contains("G1c")), "{anomalies:?}");
        }
        let rc = Append::new(TxnMode::ReadCommitted).statements(&[Mop::Read(3, None)]);
        assert!(rc.starts_with("SET transaction_isolation = 'READ-COMMITTED'; BEGIN;"));
        assert!(!rc.contains("FOR UPDATE"), "{rc}");
        let locking = Append::new(TxnMode::Pessimistic).statements(&[Mop::Read(3, None)]);
        assert!(locking.contains("WHERE k = 3 FOR UPDATE;"), "{locking}");
    }

    #[test]
    fn an_answer_gives_each_key_its_list() {
        let found = lists("3\t1,2,7\n4\t9\n").unwrap();
        assert_eq!(found[&3], vec![1, 2, 7]);
        assert_eq!(found[&4], vec![9]);
        assert!(lists("3 1,2").is_err());
        let append = Append::new(TxnMode::Optimistic);
        let sql = append.statements(&[Mop::Read(3, None), Mop::Append(3, 8)]);
        assert!(sql.starts_with("SET tidb_txn_mode = 'optimistic'; BEGIN;"));
        assert!(sql.contains("WHERE k = 3; INSERT"));
        assert!(sql.contains("CONCAT(v, ',8')"));
        assert!(sql.ends_with(" COMMIT"));
    }
}
