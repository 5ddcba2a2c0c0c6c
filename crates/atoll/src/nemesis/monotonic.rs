//! The monotonic workload: clients increment one counter (`UPDATE ... SET v = v + 1`) and
//! read it. A read that began after another read ended must not see a smaller value (reads
//! take their snapshot from PD's timestamps, which never go back, even when a pd member's
//! clock does); the final value lies between the acknowledged increments and those plus the
//! ones whose outcome is unknown (an increment lost to a concurrent one shows here).

use rand::Rng;
use rand::rngs::StdRng;

use super::client::{Failure, Op, Outcome, mysql};
use super::{Attempt, TxnMode, Workload};

const SETUP: &str = "CREATE DATABASE IF NOT EXISTS jepsen; \
     CREATE TABLE IF NOT EXISTS jepsen.counter (k BIGINT PRIMARY KEY, v BIGINT NOT NULL); \
     INSERT IGNORE INTO jepsen.counter VALUES (0, 0)";
const READ: &str = "SELECT v FROM jepsen.counter WHERE k = 0";

pub struct Monotonic {
    pub mode: TxnMode,
}

impl Workload for Monotonic {
    fn name(&self) -> &'static str {
        "monotonic"
    }

    fn setup(&self) -> String {
        SETUP.to_string()
    }

    fn operation(&self, rng: &mut StdRng, sql_node: &str) -> Attempt {
        if rng.random_bool(0.5) {
            let sql = format!(
                "{} UPDATE jepsen.counter SET v = v + 1 WHERE k = 0; COMMIT",
                self.mode.begin()
            );
            return Attempt {
                kind: "increment",
                value: String::new(),
                result: mysql(sql_node, &sql).map(|_| ()),
            };
        }
        let answer = mysql(sql_node, READ);
        Attempt {
            kind: "read",
            value: answer
                .as_ref()
                .map(|a| a.trim().to_string())
                .unwrap_or_default(),
            result: answer.map(|_| ()),
        }
    }

    fn final_read(&self, sql_node: &str) -> Result<String, Failure> {
        mysql(sql_node, READ)
    }

    fn split(&self, _: &mut StdRng) -> Option<String> {
        None
    }

    fn check(&self, history: &[&Op], final_reads: &[(String, String)]) -> Vec<String> {
        let mut out = Vec::new();
        // Reads by start; each must see at least the largest value of the reads that ended
        // before it began.
        let mut reads: Vec<(u64, u64, u64, usize)> = history
            .iter()
            .filter(|op| op.kind == "read" && op.outcome == Outcome::Ok)
            .filter_map(|op| Some((op.start_ms, op.end_ms, op.value.parse().ok()?, op.client)))
            .collect();
        reads.sort_unstable();
        let mut by_end = reads.clone();
        by_end.sort_unstable_by_key(|r| r.1);
        let (mut ended, mut floor) = (0, None::<(u64, u64)>);
        for &(start, _, value, client) in &reads {
            while ended < by_end.len() && by_end[ended].1 < start {
                let (_, end, v, _) = by_end[ended];
                if floor.is_none_or(|(f, _)| v > f) {
                    floor = Some((v, end));
                }
                ended += 1;
            }
            if let Some((f, at)) = floor
                && value < f
            {
                out.push(format!(
                    "monotonic: client {client} read {value} at {start} ms, after a read that ended at {at} ms saw {f}"
                ));
            }
        }
        let count = |o: Outcome| {
            history
                .iter()
                .filter(|op| op.kind == "increment" && op.outcome == o)
                .count() as u64
        };
        let (low, high) = (
            count(Outcome::Ok),
            count(Outcome::Ok) + count(Outcome::Unknown),
        );
        for (node, answer) in final_reads {
            match answer.trim().parse::<u64>() {
                Ok(v) if (low..=high).contains(&v) => {}
                Ok(v) => out.push(format!(
                    "monotonic: final read on {node} is {v}, not within the {low} acknowledged and {high} attempted increments"
                )),
                Err(_) => out.push(format!("monotonic: final read on {node}: {answer:?}")),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: &'static str, value: &str, outcome: Outcome, start_ms: u64, end_ms: u64) -> Op {
        Op::test("monotonic", kind, value, outcome, start_ms, end_ms)
    }

    #[test]
    fn a_later_read_may_not_go_back_and_the_final_value_counts_the_increments() {
        let history = [
            op("increment", "", Outcome::Ok, 0, 5),
            op("increment", "", Outcome::Unknown, 0, 5),
            op("increment", "", Outcome::Fail, 0, 5),
            op("read", "2", Outcome::Ok, 10, 20),
            // Overlaps the read of 2: may see less.
            op("read", "1", Outcome::Ok, 15, 25),
            op("read", "1", Outcome::Ok, 30, 35),
        ];
        let refs: Vec<&Op> = history.iter().collect();
        let m = Monotonic {
            mode: TxnMode::Pessimistic,
        };
        let good = [("n".to_string(), "2\n".to_string())];
        let found = m.check(&refs[..5], &good);
        assert!(found.is_empty(), "{found:?}");
        let found = m.check(&refs, &[("n".to_string(), "3\n".to_string())]);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("read 1 at 30 ms, after a read that ended at 20 ms saw 2"));
        assert!(found[1].contains("final read on n is 3"));
    }
}
