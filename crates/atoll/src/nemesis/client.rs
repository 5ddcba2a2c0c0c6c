//! How the workloads' clients talk to the sql nodes, and what the history records. A client
//! runs each operation through the `mysql` command-line client, one connection per
//! operation, and records it as ok, failed (certainly did not happen) or unknown (may have
//! happened), as Jepsen's clients do.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

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
    pub workload: &'static str,
    pub client: usize,
    pub kind: &'static str,
    pub node: String,
    /// Milliseconds since the run began.
    pub start_ms: u64,
    pub end_ms: u64,
    pub outcome: Outcome,
    /// What it wrote, or read when it succeeded.
    pub value: String,
    /// Why it failed or is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A statement's failure: its outcome and the client's message.
pub type Failure = (Outcome, String);

/// Runs `sql` on the sql node at `addr`; the output, or how it failed.
pub fn mysql(addr: &str, sql: &str) -> Result<String, Failure> {
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
    // In batch mode the client echoes the failed statement before its ERROR line.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error = stderr
        .lines()
        .rfind(|l| l.starts_with("ERROR"))
        .unwrap_or(stderr.trim())
        .to_string();
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

#[cfg(test)]
mod tests {
    use super::*;

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
