//! The table workload (the DDL race Jepsen found in TiDB 2.1): clients create tables
//! `jepsen.t<N>` and insert rows into tables created before. Once `CREATE TABLE` returned,
//! the table exists for everyone: an insert that began after that and was answered "1146
//! table doesn't exist" is an anomaly, and so is a created table missing from the final
//! reads.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::Rng;
use rand::rngs::StdRng;

use super::client::{Failure, Op, Outcome, mysql};
use super::{Attempt, Workload};

/// Share of operations that create a table.
const CREATE_SHARE: f64 = 0.1;
const READ: &str = "SHOW TABLES FROM jepsen";

pub struct Table {
    /// Tables whose creation was attempted, by number.
    tables: Mutex<Vec<u64>>,
    next_table: AtomicU64,
    next_row: AtomicU64,
}

impl Table {
    pub fn new() -> Table {
        Table {
            tables: Mutex::default(),
            next_table: AtomicU64::new(0),
            next_row: AtomicU64::new(1),
        }
    }
}

impl Workload for Table {
    fn name(&self) -> &'static str {
        "table"
    }

    fn setup(&self) -> String {
        "CREATE DATABASE IF NOT EXISTS jepsen".to_string()
    }

    fn operation(&self, rng: &mut StdRng, sql_node: &str) -> Attempt {
        let known = self.tables.lock().expect("tables lock").clone();
        if known.is_empty() || rng.random_bool(CREATE_SHARE) {
            let n = self.next_table.fetch_add(1, Ordering::Relaxed);
            self.tables.lock().expect("tables lock").push(n);
            let sql = format!("CREATE TABLE jepsen.t{n} (id BIGINT PRIMARY KEY)");
            return Attempt {
                kind: "create",
                value: format!("t{n}"),
                result: mysql(sql_node, &sql).map(|_| ()),
            };
        }
        let n = known[rng.random_range(0..known.len())];
        let row = self.next_row.fetch_add(1, Ordering::Relaxed);
        Attempt {
            kind: "insert",
            value: format!("t{n}"),
            result: mysql(sql_node, &format!("INSERT INTO jepsen.t{n} VALUES ({row})")).map(|_| ()),
        }
    }

    fn final_read(&self, sql_node: &str) -> Result<String, Failure> {
        mysql(sql_node, READ)
    }

    fn split(&self, rng: &mut StdRng) -> Option<String> {
        let n = *self.tables.lock().expect("tables lock").last()?;
        let top = self.next_row.load(Ordering::Relaxed).max(2);
        Some(format!(
            "SPLIT TABLE jepsen.t{n} BY ({})",
            rng.random_range(1..top)
        ))
    }

    fn check(&self, history: &[&Op], final_reads: &[(String, String)]) -> Vec<String> {
        let created: HashMap<&str, u64> = history
            .iter()
            .filter(|op| op.kind == "create" && op.outcome == Outcome::Ok)
            .map(|op| (op.value.as_str(), op.end_ms))
            .collect();
        let mut out: Vec<String> = history
            .iter()
            .filter(|op| op.kind == "insert")
            .filter(|op| op.error.as_deref().is_some_and(|e| e.contains("ERROR 1146")))
            .filter_map(|op| {
                let at = created.get(op.value.as_str())?;
                (*at < op.start_ms).then(|| {
                    format!(
                        "table: {} did not exist for client {} at {} ms on {}, though its CREATE TABLE returned at {at} ms",
                        op.value, op.client, op.start_ms, op.node
                    )
                })
            })
            .collect();
        for (node, answer) in final_reads {
            let present: BTreeSet<&str> = answer.lines().map(str::trim).collect();
            let mut missing: Vec<&&str> =
                created.keys().filter(|t| !present.contains(**t)).collect();
            missing.sort();
            if !missing.is_empty() {
                out.push(format!(
                    "table: the final read on {node} misses created tables {missing:?}"
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_created_before_an_insert_began_must_be_there() {
        let op = |kind, table: &str, error: Option<&str>, start_ms, end_ms| {
            let outcome = if error.is_some() {
                Outcome::Fail
            } else {
                Outcome::Ok
            };
            Op {
                error: error.map(str::to_string),
                ..Op::test("table", kind, table, outcome, start_ms, end_ms)
            }
        };
        let missing = Some("ERROR 1146 (42S02) at line 1: Table 'jepsen.t0' doesn't exist");
        let history = [
            op("create", "t0", None, 0, 10),
            // Began before the create returned: may not see it.
            op("insert", "t0", missing, 5, 12),
            op("insert", "t0", missing, 20, 25),
            op("create", "t1", Some("ERROR 2013"), 0, 10),
            op("insert", "t1", missing, 20, 25),
        ];
        let refs: Vec<&Op> = history.iter().collect();
        let found = Table::new().check(&refs, &[("n".to_string(), "t1\n".to_string())]);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("t0 did not exist for client 0 at 20 ms"));
        assert!(found[1].contains("misses created tables [\"t0\"]"));
    }
}
