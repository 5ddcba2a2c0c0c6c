//! The set workload (Jepsen's set-full): clients insert numbers no one inserted before, one
//! row each, and now and then read them all. A read must hold every insert acknowledged
//! before it began; the final reads must hold every acknowledged insert, none that certainly
//! failed, and nothing no one inserted.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use rand::Rng;
use rand::rngs::StdRng;

use super::client::{Failure, Op, Outcome, mysql, numbers};
use super::{Attempt, Workload};

const SETUP: &str = "CREATE DATABASE IF NOT EXISTS jepsen; \
     CREATE TABLE IF NOT EXISTS jepsen.sets (v BIGINT PRIMARY KEY)";
const READ: &str = "SELECT v FROM jepsen.sets";
/// Share of operations that read the whole set.
const READ_SHARE: f64 = 0.1;

pub struct Set {
    next: AtomicU64,
}

impl Set {
    pub fn new() -> Set {
        Set {
            next: AtomicU64::new(1),
        }
    }
}

impl Workload for Set {
    fn name(&self) -> &'static str {
        "set"
    }

    fn setup(&self) -> String {
        SETUP.to_string()
    }

    fn operation(&self, rng: &mut StdRng, sql_node: &str) -> Attempt {
        if rng.random_bool(READ_SHARE) {
            let answer = mysql(sql_node, READ);
            return Attempt {
                kind: "read",
                value: answer.as_ref().cloned().unwrap_or_default(),
                result: answer.map(|_| ()),
            };
        }
        let v = self.next.fetch_add(1, Ordering::Relaxed);
        Attempt {
            kind: "add",
            value: v.to_string(),
            result: mysql(sql_node, &format!("INSERT INTO jepsen.sets VALUES ({v})")).map(|_| ()),
        }
    }

    fn final_read(&self, sql_node: &str) -> Result<String, Failure> {
        mysql(sql_node, READ)
    }

    fn split(&self, rng: &mut StdRng) -> Option<String> {
        let top = self.next.load(Ordering::Relaxed).max(2);
        Some(format!(
            "SPLIT TABLE jepsen.sets BY ({})",
            rng.random_range(1..top)
        ))
    }

    fn check(&self, history: &[&Op], final_reads: &[(String, String)]) -> Vec<String> {
        let adds: HashMap<u64, &Op> = history
            .iter()
            .filter(|op| op.kind == "add")
            .filter_map(|op| Some((op.value.parse().ok()?, *op)))
            .collect();
        let mut acknowledged: Vec<(u64, u64)> = adds
            .iter()
            .filter(|(_, op)| op.outcome == Outcome::Ok)
            .map(|(v, op)| (op.end_ms, *v))
            .collect();
        acknowledged.sort_unstable();
        let mut out = Vec::new();
        let mut judge = |who: String, seen: &BTreeSet<u64>, before_ms: u64| {
            let lost: Vec<u64> = acknowledged
                .iter()
                .take_while(|(end, _)| *end < before_ms)
                .map(|(_, v)| *v)
                .filter(|v| !seen.contains(v))
                .collect();
            if !lost.is_empty() {
                out.push(format!(
                    "set: {who} misses {} acknowledged inserts: {:?}",
                    lost.len(),
                    &lost[..lost.len().min(20)]
                ));
            }
            let foreign: Vec<u64> = seen
                .iter()
                .copied()
                .filter(|v| adds.get(v).is_none_or(|op| op.outcome == Outcome::Fail))
                .collect();
            if !foreign.is_empty() {
                out.push(format!(
                    "set: {who} holds {} values whose insert failed or never ran: {:?}",
                    foreign.len(),
                    &foreign[..foreign.len().min(20)]
                ));
            }
        };
        for op in history
            .iter()
            .filter(|op| op.kind == "read" && op.outcome == Outcome::Ok)
        {
            let who = format!("read by client {} at {} ms", op.client, op.start_ms);
            judge(who, &numbers(&op.value), op.start_ms);
        }
        for (node, answer) in final_reads {
            judge(format!("final read on {node}"), &numbers(answer), u64::MAX);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: &'static str, value: &str, outcome: Outcome, start_ms: u64, end_ms: u64) -> Op {
        Op::test("set", kind, value, outcome, start_ms, end_ms)
    }

    #[test]
    fn reads_must_hold_what_was_acknowledged_before_them_and_nothing_failed() {
        let history = [
            op("add", "1", Outcome::Ok, 0, 10),
            op("add", "2", Outcome::Unknown, 5, 20),
            op("add", "3", Outcome::Fail, 5, 20),
            op("add", "4", Outcome::Ok, 30, 40),
            // Began before 4 was acknowledged: may miss it.
            op("read", "1\n", Outcome::Ok, 35, 50),
            op("read", "1\n2\n", Outcome::Ok, 60, 70),
        ];
        let refs: Vec<&Op> = history.iter().collect();
        let set = Set::new();
        let clean = [("n".to_string(), "1\n4\n".to_string())];
        let found = set.check(&refs, &clean);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("read by client 0 at 60 ms misses 1"),
            "{found:?}"
        );
        let bad = [("n".to_string(), "1\n3\n9\n".to_string())];
        let found = set.check(&refs[..4], &bad);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("misses 1 acknowledged inserts: [4]"));
        assert!(found[1].contains("[3, 9]"));
    }
}
