//! How the workloads' clients talk to the sql nodes, and what the history records. A client
//! runs each operation through the `mysql` command-line client, one connection per
//! operation, and records it as ok, failed (certainly did not happen) or unknown (may have
//! happened), as Jepsen's clients do. Clients share a [`Balancer`], as an application behind
//! a load balancer with health checks would (HAProxy's `mysql-check`): a sql node that does
//! not greet a new connection within [`CHECK_TIMEOUT`], or that a client could not reach, is
//! left alone for a while.

use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::Rng;
use rand::rngs::StdRng;
use serde::Serialize;

/// Longest an operation may take before it is given up (outcome unknown).
pub const OP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the balancer leaves a sql node alone that could not be reached.
const AVOID: Duration = Duration::from_secs(5);
/// How often the balancer checks every node, and how long it waits for a greeting.
const CHECK_EVERY: Duration = Duration::from_millis(200);
const CHECK_TIMEOUT: Duration = Duration::from_millis(500);

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

#[cfg(test)]
impl Op {
    /// An operation of client 0 on no node, for checkers' tests.
    pub fn test(
        workload: &'static str,
        kind: &'static str,
        value: &str,
        outcome: Outcome,
        start_ms: u64,
        end_ms: u64,
    ) -> Op {
        Op {
            workload,
            client: 0,
            kind,
            node: String::new(),
            start_ms,
            end_ms,
            outcome,
            value: value.to_string(),
            error: None,
        }
    }
}

/// A statement's failure: its outcome and the client's message.
pub type Failure = (Outcome, String);

/// The numbers in a one-column answer, one per line (lines that are not a number are left
/// out).
pub fn numbers(answer: &str) -> std::collections::BTreeSet<u64> {
    answer
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Runs `sql` on the sql node at `addr`; the output, or how it failed.
pub fn mysql(addr: &str, sql: &str) -> Result<String, Failure> {
    let (host, port) = addr.split_once(':').unwrap_or((addr, "4000"));
    let mut child = Command::new("mysql")
        .args(["-h", host, "-P", port, "-u", "root", "--batch", "-N"])
        .args(["--connect-timeout=2", "-e", sql])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| (Outcome::Fail, format!("cannot run mysql: {e}")))?;
    // Both pipes are drained while the client runs: an answer larger than a pipe holds
    // would otherwise stall it until the timeout.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + OP_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err((Outcome::Unknown, format!("no answer in {OP_TIMEOUT:?}")));
            }
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if status.success() {
        return Ok(String::from_utf8_lossy(&stdout).into_owned());
    }
    // In batch mode the client echoes the failed statement before its ERROR line.
    let stderr = String::from_utf8_lossy(&stderr);
    let error = stderr
        .lines()
        .rfind(|l| l.starts_with("ERROR"))
        .unwrap_or(stderr.trim())
        .to_string();
    Err((classify(&error), error))
}

/// The sql nodes, each with the time until which clients leave it alone.
pub struct Balancer {
    nodes: Mutex<Vec<(String, Instant)>>,
}

impl Balancer {
    pub fn new(nodes: &[String]) -> Balancer {
        let now = Instant::now();
        Balancer {
            nodes: Mutex::new(nodes.iter().map(|n| (n.clone(), now)).collect()),
        }
    }

    /// A random node among those not left alone (among all when every one is).
    pub fn pick(&self, rng: &mut StdRng) -> String {
        let nodes = self.nodes.lock().expect("balancer lock");
        let now = Instant::now();
        let healthy: Vec<&String> = nodes
            .iter()
            .filter(|(_, until)| *until <= now)
            .map(|(n, _)| n)
            .collect();
        if healthy.is_empty() {
            return nodes[rng.random_range(0..nodes.len())].0.clone();
        }
        healthy[rng.random_range(0..healthy.len())].clone()
    }

    /// Leaves `node` alone for a while when `error` says it could not be reached.
    pub fn report(&self, node: &str, error: &str) {
        const UNREACHABLE: [&str; 4] = [
            "ERROR 2002",
            "ERROR 2003",
            "reading initial communication packet",
            "reading authorization packet",
        ];
        if UNREACHABLE.iter().any(|e| error.contains(e)) {
            self.avoid(node);
        }
    }

    fn avoid(&self, node: &str) {
        let mut nodes = self.nodes.lock().expect("balancer lock");
        if let Some(entry) = nodes.iter_mut().find(|(n, _)| n == node) {
            entry.1 = Instant::now() + AVOID;
        }
    }

    /// Checks each node every [`CHECK_EVERY`] (a thread each) until `done` says stop: a node
    /// must accept a connection and send its greeting within [`CHECK_TIMEOUT`].
    pub fn watch(
        self: std::sync::Arc<Self>,
        done: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Vec<std::thread::JoinHandle<()>> {
        let nodes: Vec<String> = self
            .nodes
            .lock()
            .expect("balancer lock")
            .iter()
            .map(|(n, _)| n.clone())
            .collect();
        let done = std::sync::Arc::new(done);
        nodes
            .into_iter()
            .map(|node| {
                let (balancer, done) = (self.clone(), done.clone());
                std::thread::spawn(move || {
                    while !done() {
                        if !greets(&node) {
                            balancer.avoid(&node);
                        }
                        std::thread::sleep(CHECK_EVERY);
                    }
                })
            })
            .collect()
    }
}

/// Whether the MySQL server at `addr` sends the first bytes of its greeting in time.
fn greets(addr: &str) -> bool {
    use std::io::Read;
    let Ok(addr) = addr.parse() else {
        return false;
    };
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&addr, CHECK_TIMEOUT) else {
        return false;
    };
    let mut header = [0u8; 4];
    stream.set_read_timeout(Some(CHECK_TIMEOUT)).is_ok() && stream.read_exact(&mut header).is_ok()
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
    fn the_balancer_leaves_an_unreachable_node_alone() {
        use rand::SeedableRng;
        let nodes = ["a".to_string(), "b".to_string()];
        let balancer = Balancer::new(&nodes);
        let mut rng = StdRng::seed_from_u64(1);
        balancer.report("a", "ERROR 1213 (40001): Deadlock found");
        assert!((0..50).any(|_| balancer.pick(&mut rng) == "a"));
        balancer.report("a", "ERROR 2013 (HY000): Lost connection to server at 'handshake: reading initial communication packet'");
        assert!((0..50).all(|_| balancer.pick(&mut rng) == "b"));
        balancer.report("b", "ERROR 2003 (HY000): Can't connect");
        assert!(
            (0..50).any(|_| balancer.pick(&mut rng) == "a"),
            "all avoided: any"
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
