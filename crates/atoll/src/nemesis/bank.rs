//! The bank workload and its checker. `ACCOUNTS` accounts start with `BALANCE` each;
//! clients transfer random amounts between random accounts in transactions, and read every
//! balance in one statement. A transfer is atomic whether it succeeds, fails or its outcome
//! is unknown, so every successful read must see the same total and every account; a read
//! that does not is an anomaly (Jepsen's bank). So must the final reads.

use rand::Rng;
use rand::rngs::StdRng;

use super::client::{Failure, Op, Outcome, mysql};
use super::{Attempt, TxnMode, Workload};

const ACCOUNTS: u64 = 5;
const BALANCE: i64 = 100;
const READ: &str = "SELECT id, balance FROM jepsen.bank ORDER BY id";

pub struct Bank {
    pub mode: TxnMode,
}

impl Workload for Bank {
    fn name(&self) -> &'static str {
        "bank"
    }

    fn setup(&self) -> String {
        let values = (0..ACCOUNTS)
            .map(|id| format!("({id}, {BALANCE})"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "CREATE DATABASE IF NOT EXISTS jepsen; \
             CREATE TABLE IF NOT EXISTS jepsen.bank (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL); \
             INSERT IGNORE INTO jepsen.bank VALUES {values}"
        )
    }

    fn operation(&self, rng: &mut StdRng, sql_node: &str) -> Attempt {
        if rng.random_bool(0.5) {
            let from = rng.random_range(0..ACCOUNTS);
            let to = (from + rng.random_range(1..ACCOUNTS)) % ACCOUNTS;
            let amount = rng.random_range(1..=5);
            let sql = format!(
                "{} UPDATE jepsen.bank SET balance = balance - {amount} WHERE id = {from}; \
                 UPDATE jepsen.bank SET balance = balance + {amount} WHERE id = {to}; COMMIT",
                self.mode.begin()
            );
            Attempt {
                kind: "transfer",
                value: format!("{amount} from {from} to {to}"),
                result: mysql(sql_node, &sql).map(|_| ()),
            }
        } else {
            let answer = mysql(sql_node, READ);
            Attempt {
                kind: "read",
                value: answer.as_ref().cloned().unwrap_or_default(),
                result: answer.map(|_| ()),
            }
        }
    }

    fn final_read(&self, sql_node: &str) -> Result<String, Failure> {
        mysql(sql_node, READ)
    }

    fn split(&self, rng: &mut StdRng) -> Option<String> {
        Some(format!(
            "SPLIT TABLE jepsen.bank BY ({})",
            rng.random_range(1..ACCOUNTS)
        ))
    }

    fn check(&self, history: &[&Op], final_reads: &[(String, String)]) -> Vec<String> {
        let reads = history
            .iter()
            .filter(|op| op.kind == "read" && op.outcome == Outcome::Ok)
            .filter_map(|op| {
                check_read(&op.value).map(|why| {
                    format!(
                        "bank: read by client {} at {} ms on {}: {why}",
                        op.client, op.end_ms, op.node
                    )
                })
            });
        let finals = final_reads.iter().filter_map(|(node, answer)| {
            check_read(answer).map(|why| format!("bank: final read on {node}: {why}"))
        });
        reads.chain(finals).collect()
    }
}
/// What is wrong with a read's answer, if anything.
fn check_read(answer: &str) -> Option<String> {
    let rows: Vec<(u64, i64)> = answer
        .lines()
        .filter_map(|l| {
            let (id, balance) = l.split_once('\t')?;
            Some((id.trim().parse().ok()?, balance.trim().parse().ok()?))
        })
        .collect();
    let total: i64 = rows.iter().map(|(_, b)| b).sum();
    let expected = BALANCE * ACCOUNTS as i64;
    if rows.len() as u64 != ACCOUNTS {
        return Some(format!(
            "{} accounts instead of {ACCOUNTS}: {answer:?}",
            rows.len()
        ));
    }
    (total != expected).then(|| format!("total {total} instead of {expected}: {rows:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_with_a_wrong_total_or_a_missing_account_is_an_anomaly() {
        assert_eq!(check_read("0\t100\n1\t90\n2\t110\n3\t100\n4\t100\n"), None);
        assert!(
            check_read("0\t100\n1\t90\n2\t100\n3\t100\n4\t100\n")
                .unwrap()
                .contains("total 490")
        );
        assert!(
            check_read("0\t100\n1\t100\n2\t100\n3\t200\n")
                .unwrap()
                .contains("4 accounts")
        );
    }
}
