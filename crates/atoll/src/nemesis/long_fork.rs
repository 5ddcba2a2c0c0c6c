//! Jepsen's long-fork workload: clients insert keys no one inserted before, one row each,
//! and read a group of [`GROUP`] consecutive keys in one statement (one snapshot). Under
//! snapshot isolation, and anything stronger, every transaction sees the commits in one
//! order, so of two reads of a group one holds every key the other holds. Two reads that
//! each hold a key the other lacks saw two inserts commit in opposite orders: a long fork
//! (parallel snapshot isolation allows it; TiDB's single timestamp oracle must not).
//!
//! The final reads must hold every acknowledged insert and every key a read saw, and no
//! read may hold a key whose insert failed or never ran.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use rand::Rng;
use rand::rngs::StdRng;

use super::client::{Failure, Op, Outcome, mysql, numbers};
use super::{Attempt, Workload};

/// Keys a read covers; writers fill one group after the other.
const GROUP: u64 = 4;
const SETUP: &str = "CREATE DATABASE IF NOT EXISTS jepsen; \
     CREATE TABLE IF NOT EXISTS jepsen.long_fork (k BIGINT PRIMARY KEY)";
/// Share of operations that read a group.
const READ_SHARE: f64 = 0.5;
/// Long forks reported in full, at most (the rest are counted).
const MAX_REPORTED: usize = 5;

pub struct LongFork {
    next: AtomicU64,
}

impl LongFork {
    pub fn new() -> LongFork {
        LongFork {
            next: AtomicU64::new(0),
        }
    }
}

impl Workload for LongFork {
    fn name(&self) -> &'static str {
        "long-fork"
    }

    fn setup(&self) -> String {
        SETUP.to_string()
    }

    fn operation(&self, rng: &mut StdRng, sql_node: &str) -> Attempt {
        if rng.random_bool(READ_SHARE) {
            // The group being filled, or the one before it.
            let group = (self.next.load(Ordering::Relaxed) / GROUP)
                .saturating_sub(u64::from(rng.random_bool(0.3)));
            let first = group * GROUP;
            let sql = format!(
                "SELECT k FROM jepsen.long_fork WHERE k BETWEEN {first} AND {}",
                first + GROUP - 1
            );
            let answer = mysql(sql_node, &sql);
            return Attempt {
                kind: "read",
                value: answer.as_ref().cloned().unwrap_or_default(),
                result: answer.map(|_| ()),
            };
        }
        let k = self.next.fetch_add(1, Ordering::Relaxed);
        Attempt {
            kind: "insert",
            value: k.to_string(),
            result: mysql(
                sql_node,
                &format!("INSERT INTO jepsen.long_fork VALUES ({k})"),
            )
            .map(|_| ()),
        }
    }

    fn final_read(&self, sql_node: &str) -> Result<String, Failure> {
        mysql(sql_node, "SELECT k FROM jepsen.long_fork")
    }

    fn split(&self, rng: &mut StdRng) -> Option<String> {
        let top = self.next.load(Ordering::Relaxed).max(2);
        Some(format!(
            "SPLIT TABLE jepsen.long_fork BY ({})",
            rng.random_range(1..top)
        ))
    }

    fn check(&self, history: &[&Op], final_reads: &[(String, String)]) -> Vec<String> {
        let inserts: HashMap<u64, Outcome> = history
            .iter()
            .filter(|op| op.kind == "insert")
            .filter_map(|op| Some((op.value.parse().ok()?, op.outcome)))
            .collect();
        let mut out = Vec::new();
        // Every successful read, by the group it covers (an empty read is ordered with any).
        let mut groups: BTreeMap<u64, Vec<(String, BTreeSet<u64>)>> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for op in history
            .iter()
            .filter(|op| op.kind == "read" && op.outcome == Outcome::Ok)
        {
            let keys = numbers(&op.value);
            let Some(first) = keys.first() else { continue };
            seen.extend(keys.iter().copied());
            let who = format!("read by client {} at {} ms", op.client, op.start_ms);
            groups.entry(first / GROUP).or_default().push((who, keys));
        }
        let mut forks = 0;
        for reads in groups.values() {
            for (i, (a, a_keys)) in reads.iter().enumerate() {
                for (b, b_keys) in &reads[i + 1..] {
                    if a_keys.is_subset(b_keys) || b_keys.is_subset(a_keys) {
                        continue;
                    }
                    forks += 1;
                    if forks <= MAX_REPORTED {
                        out.push(format!(
                            "long-fork: {a} saw {a_keys:?} and {b} saw {b_keys:?}: each holds a key the other lacks"
                        ));
                    }
                }
            }
        }
        if forks > MAX_REPORTED {
            out.push(format!(
                "long-fork: {} more long forks",
                forks - MAX_REPORTED
            ));
        }
        let foreign: Vec<u64> = seen
            .iter()
            .copied()
            .filter(|k| inserts.get(k).is_none_or(|o| *o == Outcome::Fail))
            .collect();
        if !foreign.is_empty() {
            out.push(format!(
                "long-fork: reads hold keys whose insert failed or never ran: {:?}",
                &foreign[..foreign.len().min(20)]
            ));
        }
        let durable: BTreeSet<u64> = inserts
            .iter()
            .filter(|(_, o)| **o == Outcome::Ok)
            .map(|(k, _)| *k)
            .chain(seen.iter().copied())
            .collect();
        for (node, answer) in final_reads {
            let last = numbers(answer);
            let lost: Vec<u64> = durable.difference(&last).copied().collect();
            if !lost.is_empty() {
                out.push(format!(
                    "long-fork: final read on {node} misses {} keys that were acknowledged or read: {:?}",
                    lost.len(),
                    &lost[..lost.len().min(20)]
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: &'static str, value: &str, outcome: Outcome, at_ms: u64) -> Op {
        Op::test("long-fork", kind, value, outcome, at_ms, at_ms + 1)
    }

    #[test]
    fn two_reads_that_each_miss_what_the_other_saw_are_a_long_fork() {
        let history = [
            op("insert", "0", Outcome::Ok, 0),
            op("insert", "1", Outcome::Ok, 0),
            op("insert", "2", Outcome::Unknown, 0),
            op("insert", "3", Outcome::Fail, 0),
            op("read", "0\n", Outcome::Ok, 5),
            op("read", "0\n1\n", Outcome::Ok, 6),
            op("read", "", Outcome::Ok, 7),
            op("read", "0\n2\n", Outcome::Ok, 8),
        ];
        let refs: Vec<&Op> = history.iter().collect();
        let whole = [("n".to_string(), "0\n1\n2\n".to_string())];
        let found = LongFork::new().check(&refs, &whole);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("saw {0, 1}"), "{found:?}");
        assert!(found[0].contains("saw {0, 2}"), "{found:?}");
        // Ordered reads are fine; the final read must hold what was acknowledged or read,
        // and no read may hold a failed insert.
        let found = LongFork::new().check(&refs[..6], &[("n".to_string(), "0\n".to_string())]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("misses 1 keys"), "{found:?}");
        let failed = [
            op("insert", "3", Outcome::Fail, 0),
            op("read", "3\n", Outcome::Ok, 1),
        ];
        let refs: Vec<&Op> = failed.iter().collect();
        let found = LongFork::new().check(&refs, &[("n".to_string(), "3\n".to_string())]);
        assert!(found[0].contains("failed or never ran: [3]"), "{found:?}");
    }
}
