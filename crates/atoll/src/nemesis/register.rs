//! The register workload: clients read, write and compare-and-set single-row registers, and
//! the checker asks whether each register's history is linearizable (Wing and Gong's search
//! with Lowe's memo of visited states, as Knossos and Porcupine do it): some order of the
//! operations that respects real time (an operation that ended before another began comes
//! first) must explain every value read. An operation whose outcome is unknown may have taken
//! effect at any time after it began, or never; a read that failed tells nothing.
//!
//! A few registers are in use at a time; each takes at most [`MAX_OPS_PER_KEY`] operations and
//! is then replaced by a fresh one, which keeps every search small.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use rand::Rng;
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};

use super::client::{Failure, Op, Outcome, mysql};
use super::{Attempt, Workload};

const SETUP: &str = "CREATE DATABASE IF NOT EXISTS jepsen; \
     CREATE TABLE IF NOT EXISTS jepsen.registers (k BIGINT PRIMARY KEY, v BIGINT NOT NULL)";
/// Registers in use at a time.
const ACTIVE_KEYS: usize = 3;
/// Operations a register takes before a fresh one replaces it.
const MAX_OPS_PER_KEY: u32 = 150;
/// Values written are below this, so that compare-and-set often finds its value.
const VALUES: u64 = 5;
/// Search states visited per register before the checker gives up on it (and says so).
const MAX_STATES: usize = 2_000_000;

/// A register operation as the history keeps it (JSON). A read's value is None when the
/// register held nothing (or the read was not answered: then its outcome says so).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RegisterOp {
    Read(u64, Option<u64>),
    Write(u64, u64),
    Cas(u64, u64, u64),
}

impl RegisterOp {
    fn key(&self) -> u64 {
        match *self {
            RegisterOp::Read(k, _) | RegisterOp::Write(k, _) | RegisterOp::Cas(k, _, _) => k,
        }
    }
}

pub struct Register {
    keys: Mutex<(Vec<(u64, u32)>, u64)>,
}

impl Register {
    pub fn new() -> Register {
        Register {
            keys: Mutex::new((
                (0..ACTIVE_KEYS as u64).map(|k| (k, 0)).collect(),
                ACTIVE_KEYS as u64,
            )),
        }
    }

    fn key(&self, rng: &mut StdRng) -> u64 {
        let (active, next) = &mut *self.keys.lock().expect("key pool lock");
        let slot = rng.random_range(0..active.len());
        let (key, ops) = &mut active[slot];
        let chosen = *key;
        *ops += 1;
        if *ops == MAX_OPS_PER_KEY {
            active[slot] = (*next, 0);
            *next += 1;
        }
        chosen
    }
}

impl Workload for Register {
    fn name(&self) -> &'static str {
        "register"
    }

    fn setup(&self) -> String {
        SETUP.to_string()
    }

    fn operation(&self, rng: &mut StdRng, sql_node: &str) -> Attempt {
        let k = self.key(rng);
        let (kind, mut op, sql) = match rng.random_range(0..3) {
            0 => (
                "read",
                RegisterOp::Read(k, None),
                format!("SELECT v FROM jepsen.registers WHERE k = {k}"),
            ),
            1 => {
                let v = rng.random_range(0..VALUES);
                (
                    "write",
                    RegisterOp::Write(k, v),
                    format!(
                        "INSERT INTO jepsen.registers VALUES ({k}, {v}) ON DUPLICATE KEY UPDATE v = {v}"
                    ),
                )
            }
            _ => {
                // New differs from old: a row updated to its own value counts as unchanged.
                let old = rng.random_range(0..VALUES);
                let new = (old + rng.random_range(1..VALUES)) % VALUES;
                (
                    "cas",
                    RegisterOp::Cas(k, old, new),
                    format!(
                        "UPDATE jepsen.registers SET v = {new} WHERE k = {k} AND v = {old}; SELECT ROW_COUNT()"
                    ),
                )
            }
        };
        let mut result = mysql(sql_node, &sql).map(|answer| answer.trim().to_string());
        match (&mut op, &result) {
            (RegisterOp::Read(_, value), Ok(answer)) => match answer.parse() {
                Ok(v) => *value = Some(v),
                Err(_) if answer.is_empty() => *value = None,
                Err(_) => result = Err((Outcome::Unknown, format!("not a value: {answer:?}"))),
            },
            // A compare-and-set that changed no row did not happen; one that changed one
            // did; any other answer says nothing.
            (RegisterOp::Cas(..), Ok(changed)) if changed == "0" => {
                result = Err((Outcome::Fail, "compare failed".to_string()))
            }
            (RegisterOp::Cas(..), Ok(changed)) if changed != "1" => {
                result = Err((Outcome::Unknown, format!("changed rows: {changed:?}")))
            }
            _ => {}
        }
        Attempt {
            kind,
            value: serde_json::to_string(&op).expect("a register op serializes"),
            result: result.map(|_| ()),
        }
    }

    fn final_read(&self, sql_node: &str) -> Result<String, Failure> {
        mysql(sql_node, "SELECT COUNT(*) FROM jepsen.registers")
    }

    fn split(&self, rng: &mut StdRng) -> Option<String> {
        let k = self.key(rng);
        Some(format!("SPLIT TABLE jepsen.registers BY ({k})"))
    }

    fn check(&self, history: &[&Op], _final_reads: &[(String, String)]) -> Vec<String> {
        let mut per_key: HashMap<u64, Vec<Call>> = HashMap::new();
        let mut out = Vec::new();
        for op in history {
            let Ok(recorded) = serde_json::from_str::<RegisterOp>(&op.value) else {
                out.push(format!("register: unreadable history entry {:?}", op.value));
                continue;
            };
            let end_ms = match op.outcome {
                Outcome::Fail => continue,
                Outcome::Unknown if matches!(recorded, RegisterOp::Read(..)) => continue,
                Outcome::Unknown => u64::MAX,
                Outcome::Ok => op.end_ms,
            };
            per_key.entry(recorded.key()).or_default().push(Call {
                op: recorded,
                start_ms: op.start_ms,
                end_ms,
                required: op.outcome == Outcome::Ok,
            });
        }
        let mut keys: Vec<_> = per_key.into_iter().collect();
        keys.sort_unstable_by_key(|(k, _)| *k);
        for (key, calls) in keys {
            match linearizable(&calls) {
                Verdict::Yes => {}
                Verdict::No(prefix) => out.push(format!(
                    "register {key}: not linearizable; the longest order that explains the history stops after {} of {} operations: {:?}",
                    prefix.len(),
                    calls.len(),
                    prefix.iter().map(|&i| &calls[i].op).collect::<Vec<_>>()
                )),
                Verdict::TooLarge => println!(
                    "nemesis: register {key}: {} operations, more than {MAX_STATES} states; not checked",
                    calls.len()
                ),
            }
        }
        out
    }
}

/// An operation on one register, with the interval it took effect in.
#[derive(Debug, Clone)]
struct Call {
    op: RegisterOp,
    start_ms: u64,
    /// u64::MAX when its outcome is unknown.
    end_ms: u64,
    /// Whether it certainly took effect (an unknown one may never have).
    required: bool,
}

#[derive(Debug, PartialEq)]
enum Verdict {
    Yes,
    /// No order explains it: the longest order found, by call index.
    No(Vec<usize>),
    TooLarge,
}

/// Wing and Gong's search: take, in turn, each call that may go next (none of the calls
/// still out ended before it began) and whose effect fits the register's value; backtrack
/// when none fits. Lowe's memo skips (calls done, value) pairs seen before.
fn linearizable(calls: &[Call]) -> Verdict {
    let n = calls.len();
    let words = n.div_ceil(64);
    let mut seen: HashSet<(Vec<u64>, Option<u64>)> = HashSet::new();
    // (calls done, register value, order so far)
    let mut stack = vec![(vec![0u64; words], None::<u64>, Vec::<usize>::new())];
    let mut longest = Vec::new();
    while let Some((done, value, order)) = stack.pop() {
        let is_done = |i: usize| done[i / 64] & (1 << (i % 64)) != 0;
        if (0..n).all(|i| is_done(i) || !calls[i].required) {
            return Verdict::Yes;
        }
        if order.len() > longest.len() {
            longest = order.clone();
        }
        // A call may go next only if no call still out ended before it began.
        let deadline = (0..n)
            .filter(|&i| !is_done(i))
            .map(|i| calls[i].end_ms)
            .min()
            .unwrap_or(u64::MAX);
        for i in (0..n).filter(|&i| !is_done(i) && calls[i].start_ms <= deadline) {
            let next = match calls[i].op {
                RegisterOp::Read(_, read) if read == value => value,
                RegisterOp::Read(..) => continue,
                RegisterOp::Write(_, v) => Some(v),
                RegisterOp::Cas(_, old, new) if value == Some(old) => Some(new),
                RegisterOp::Cas(..) => continue,
            };
            let mut after = done.clone();
            after[i / 64] |= 1 << (i % 64);
            if seen.insert((after.clone(), next)) {
                if seen.len() > MAX_STATES {
                    return Verdict::TooLarge;
                }
                let mut order = order.clone();
                order.push(i);
                stack.push((after, next, order));
            }
        }
    }
    Verdict::No(longest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(op: RegisterOp, start_ms: u64, end_ms: Option<u64>) -> Call {
        Call {
            op,
            start_ms,
            end_ms: end_ms.unwrap_or(u64::MAX),
            required: end_ms.is_some(),
        }
    }

    #[test]
    fn the_history_keeps_an_empty_read_apart_from_a_value() {
        let op = |value: RegisterOp, start_ms, end_ms| {
            let json = serde_json::to_string(&value).unwrap();
            Op::test("register", "read", &json, Outcome::Ok, start_ms, end_ms)
        };
        let history = [
            op(RegisterOp::Read(7, None), 0, 5),
            op(RegisterOp::Write(7, 2), 10, 15),
            op(RegisterOp::Read(7, Some(2)), 20, 25),
        ];
        let refs: Vec<&Op> = history.iter().collect();
        assert!(Register::new().check(&refs, &[]).is_empty());
        let found = Register::new().check(&refs[1..], &[]);
        assert!(found.is_empty(), "{found:?}");
        let stale = [history[1].clone(), op(RegisterOp::Read(7, None), 20, 25)];
        let refs: Vec<&Op> = stale.iter().collect();
        assert_eq!(Register::new().check(&refs, &[]).len(), 1);
    }

    #[test]
    fn real_time_order_decides_what_a_read_may_see() {
        use RegisterOp::*;
        // Concurrent write and read: the read may see either value.
        let concurrent = [
            call(Write(0, 1), 0, Some(10)),
            call(Write(0, 2), 20, Some(40)),
            call(Read(0, Some(1)), 25, Some(30)),
        ];
        assert_eq!(linearizable(&concurrent), Verdict::Yes);
        // The read began after the write of 2 ended: it may not see 1.
        let stale = [
            call(Write(0, 1), 0, Some(10)),
            call(Write(0, 2), 20, Some(30)),
            call(Read(0, Some(1)), 35, Some(40)),
        ];
        assert!(matches!(linearizable(&stale), Verdict::No(_)));
        // An unknown write may explain a read, or never happen.
        let unknown = [
            call(Write(0, 1), 0, Some(10)),
            call(Write(0, 3), 12, None),
            call(Read(0, Some(3)), 50, Some(60)),
            call(Read(0, Some(3)), 70, Some(80)),
        ];
        assert_eq!(linearizable(&unknown), Verdict::Yes);
        let never = [
            call(Write(0, 3), 12, None),
            call(Read(0, None), 50, Some(60)),
        ];
        assert_eq!(linearizable(&never), Verdict::Yes);
        // A compare-and-set that succeeded needs its old value there.
        let cas = [
            call(Write(0, 1), 0, Some(10)),
            call(Cas(0, 2, 4), 20, Some(30)),
        ];
        assert!(matches!(linearizable(&cas), Verdict::No(_)));
        let cas = [
            call(Write(0, 2), 0, Some(10)),
            call(Cas(0, 2, 4), 20, Some(30)),
            call(Read(0, Some(4)), 40, Some(50)),
        ];
        assert_eq!(linearizable(&cas), Verdict::Yes);
    }
}
