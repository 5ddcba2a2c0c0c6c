//! The bank workload and its checker. `ACCOUNTS` accounts start with `BALANCE` each;
//! clients transfer random amounts between random accounts in transactions, and read every
//! balance in one statement. A transfer is atomic whether it succeeds, fails or its outcome
//! is unknown, so every successful read must see the same total and every account; a read
//! that does not is an anomaly (Jepsen's bank). Clients talk to the sql nodes with the
//! `mysql` command-line client, one connection per operation.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::Rng;
use serde::Serialize;

pub const ACCOUNTS: u64 = 5;
pub const BALANCE: i64 = 100;
/// Longest an operation may take before it is given up (outcome unknown).
pub const OP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Ok,
    /// Certainly did not happen.
    Fail,
    /// May or may not have happened.
    Unknown,
}

/// One client operation, as the history records it.
#[derive(Debug, Clone, Serialize)]
pub struct Op {
    pub client: usize,
    pub kind: &'static str,
    pub node: String,
    /// Milliseconds since the run began.
    pub start_ms: u64,
    pub end_ms: u64,
    pub outcome: Outcome,
    /// What it wrote or read, or the error.
    pub value: String,
}

/// Runs `sql` on the sql node at `addr`; the output, or the outcome and message of a
/// failure.
pub fn mysql(addr: &str, sql: &str) -> Result<String, (Outcome, String)> {
    let (host, port) = addr.split_once(':').unwrap_or((addr, "4000"));
    let mut child = Command::new("mysql")
        .args(["-h", host, "-P", port, "-u", "root", "--batch", "-N"])
        .args(["--connect-timeout=5", "-e", sql])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| (Outcome::Fail, format!("cannot run mysql: {e}")))?;
    let deadline = Instant::now() + OP_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err((Outcome::Unknown, format!("no answer in {OP_TIMEOUT:?}")));
            }
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| (Outcome::Unknown, e.to_string()))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let error = String::from_utf8_lossy(&out.stderr).trim().to_string();
    Err((classify(&error), error))
}

/// Whether a failed statement certainly did not happen. A lost or refused connection
/// before the server answered, a deadlock or a conflict the server reported: it did not.
/// A connection lost while a statement ran, or an error the server could raise after a
/// commit began: it may have.
fn classify(error: &str) -> Outcome {
    const SURE: [&str; 9] = [
        "ERROR 2002",                   // cannot connect
        "ERROR 2003",                   // cannot connect
        "ERROR 1213",                   // deadlock: rolled back
        "ERROR 1205",                   // lock wait timeout
        "ERROR 9007",                   // write conflict
        "ERROR 8002",                   // write conflict (FOR UPDATE)
        "ERROR 1146",                   // table not there yet
        "reading authorization packet", // lost before the login ended
        "reading initial communication packet",
    ];
    if SURE.iter().any(|code| error.contains(code)) {
        Outcome::Fail
    } else {
        Outcome::Unknown
    }
}

/// Creates the accounts (once; a second run finds them).
pub fn setup(addr: &str) -> Result<(), String> {
    let values = (0..ACCOUNTS)
        .map(|id| format!("({id}, {BALANCE})"))
        .collect::<Vec<_>>()
        .join(", ");
    mysql(
        addr,
        &format!(
            "CREATE DATABASE IF NOT EXISTS jepsen; \
             CREATE TABLE IF NOT EXISTS jepsen.bank (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL); \
             INSERT IGNORE INTO jepsen.bank VALUES {values}"
        ),
    )
    .map(|_| ())
    .map_err(|(_, e)| e)
}

/// A random transfer (kind "transfer") or a read of every balance (kind "read").
pub fn operation(
    rng: &mut impl Rng,
    addr: &str,
) -> (&'static str, Result<String, (Outcome, String)>) {
    if rng.random_bool(0.5) {
        let from = rng.random_range(0..ACCOUNTS);
        let to = (from + rng.random_range(1..ACCOUNTS)) % ACCOUNTS;
        let amount = rng.random_range(1..=5);
        let sql = format!(
            "BEGIN; UPDATE jepsen.bank SET balance = balance - {amount} WHERE id = {from}; \
             UPDATE jepsen.bank SET balance = balance + {amount} WHERE id = {to}; COMMIT"
        );
        let answer = mysql(addr, &sql).map(|_| format!("{amount} from {from} to {to}"));
        ("transfer", answer)
    } else {
        (
            "read",
            mysql(addr, "SELECT id, balance FROM jepsen.bank ORDER BY id"),
        )
    }
}

/// What is wrong with a read's answer, if anything.
pub fn check_read(answer: &str) -> Option<String> {
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

    #[test]
    fn only_errors_that_prove_nothing_happened_are_failures() {
        assert_eq!(
            classify("ERROR 1213 (40001) at line 1: Deadlock found"),
            Outcome::Fail
        );
        assert_eq!(
            classify("ERROR 2013 (HY000) at line 1: Lost connection to server during query"),
            Outcome::Unknown
        );
        assert_eq!(classify("ERROR 2003 (HY000): Can't connect"), Outcome::Fail);
        assert_eq!(
            classify("ERROR 2002 (HY000): Can't connect to server on '10.77.1.11' (115)"),
            Outcome::Fail
        );
    }
}
