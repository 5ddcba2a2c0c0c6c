//! The nemeses: what each fault does when it starts and when it heals.
//!
//! - `kill`: SIGKILL a random process, or (one time in three) every process of a random host,
//!   as a host that loses power; restart them at the heal.
//! - `pause`: SIGSTOP a random process; SIGCONT at the heal.
//! - `partition`, in one of three shapes: a host cut off from everyone, the clients too (its
//!   interface down); a host cut off from the other hosts only, so that its sql node still
//!   takes statements (the minority side); or two hosts that lose each other while the third
//!   sees both (a bridge).
//! - `clock`: a pd member restarted with its wall clock off by up to a minute either way;
//!   restarted true at the heal.
//! - `shuffle`: PD's shuffle-leader scheduler moves leaders at random until the heal.
//! - `split`: every workload's table is split at random keys; PD merges the regions back
//!   `schedule.split-merge-interval` (10 s here) later, so the heal has nothing to do.
//! - `kv-restart`: every pd member paused and every kv node killed and restarted while they
//!   are, for [`KV_RESTART_OUTAGE`]; the heal resumes PD. Not part of `all`: no transaction
//!   gets a timestamp meanwhile, so it would take most of a short run.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use rand::Rng;
use rand::rngs::StdRng;

use super::Workload;
use super::client::mysql;
use super::cluster::{Process, Role};
use super::topology::Topology;

/// Largest wall clock offset of the clock nemesis, either way.
const MAX_CLOCK_OFFSET_S: i64 = 60;
/// How long a call to PD that starts or heals a fault is retried.
const PD_RETRY: Duration = Duration::from_secs(30);
const SHUFFLE_LEADER: &str = "shuffle-leader-scheduler";
/// How long `kv-restart` keeps PD paused (../shared/RELIABILITY.md, T3: longer than a
/// minute, past the retry budgets of whatever waits for PD).
pub const KV_RESTART_OUTAGE: Duration = Duration::from_secs(70);

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Nemesis {
    Kill,
    Pause,
    Partition,
    Clock,
    Shuffle,
    Split,
    KvRestart,
}

const ALL: [Nemesis; 6] = [
    Nemesis::Kill,
    Nemesis::Pause,
    Nemesis::Partition,
    Nemesis::Clock,
    Nemesis::Shuffle,
    Nemesis::Split,
];

/// The nemeses `--nemesis` names (comma separated; `all`, or `none`).
pub fn parse(spec: &str) -> anyhow::Result<Vec<Nemesis>> {
    let mut out = Vec::new();
    for name in spec.split(',').map(str::trim) {
        match name {
            "none" => {}
            "kill" => out.push(Nemesis::Kill),
            "pause" => out.push(Nemesis::Pause),
            "partition" => out.push(Nemesis::Partition),
            "clock" => out.push(Nemesis::Clock),
            "shuffle" => out.push(Nemesis::Shuffle),
            "split" => out.push(Nemesis::Split),
            "kv-restart" => out.push(Nemesis::KvRestart),
            "all" => out.extend(ALL),
            other => bail!(
                "unknown nemesis {other:?}: none, kill, pause, partition, clock, shuffle, split, kv-restart or all"
            ),
        }
    }
    Ok(out)
}

/// One fault, with its targets chosen.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Processes killed together (one, or a host's).
    Kill(Vec<usize>),
    Pause(usize),
    /// A host cut off from everyone.
    Isolate(usize),
    /// A host cut off from the other hosts, not from the clients.
    Minority(usize),
    /// Two hosts that lose each other.
    Bridge(usize, usize),
    /// A pd member (by process) and its clock's offset in seconds.
    Clock(usize, i64),
    Shuffle,
    /// The SPLIT TABLE statements to run.
    Split(Vec<String>),
    KvRestart,
}

impl Fault {
    /// The nemesis it belongs to, as `--nemesis` names it.
    pub fn nemesis(&self) -> &'static str {
        match self {
            Fault::Kill(_) => "kill",
            Fault::Pause(_) => "pause",
            Fault::Isolate(_) | Fault::Minority(_) | Fault::Bridge(..) => "partition",
            Fault::Clock(..) => "clock",
            Fault::Shuffle => "shuffle",
            Fault::Split(_) => "split",
            Fault::KvRestart => "kv-restart",
        }
    }

    /// How long it stays in force before its heal, at least.
    pub fn lasts_at_least(&self) -> Duration {
        match self {
            Fault::KvRestart => KV_RESTART_OUTAGE,
            _ => Duration::ZERO,
        }
    }
}

impl Nemesis {
    /// A fault of this kind with random targets.
    pub fn pick(
        self,
        rng: &mut StdRng,
        processes: &[Process],
        hosts: usize,
        workloads: &[Arc<dyn Workload>],
    ) -> Fault {
        match self {
            Nemesis::Kill if rng.random_bool(1.0 / 3.0) => {
                let host = rng.random_range(0..hosts);
                Fault::Kill(indices(processes, |p| p.host == host))
            }
            Nemesis::Kill => Fault::Kill(vec![rng.random_range(0..processes.len())]),
            Nemesis::Pause => Fault::Pause(rng.random_range(0..processes.len())),
            Nemesis::Partition => {
                let host = rng.random_range(0..hosts);
                match rng.random_range(0..3) {
                    0 => Fault::Isolate(host),
                    1 => Fault::Minority(host),
                    _ => Fault::Bridge(host, (host + rng.random_range(1..hosts)) % hosts),
                }
            }
            Nemesis::Clock => {
                let pds = indices(processes, |p| p.role == Role::Pd);
                let offset = rng.random_range(1..=MAX_CLOCK_OFFSET_S);
                let sign = if rng.random_bool(0.5) { 1 } else { -1 };
                Fault::Clock(pds[rng.random_range(0..pds.len())], sign * offset)
            }
            Nemesis::Shuffle => Fault::Shuffle,
            Nemesis::Split => Fault::Split(workloads.iter().filter_map(|w| w.split(rng)).collect()),
            Nemesis::KvRestart => Fault::KvRestart,
        }
    }
}

/// The positions in `processes` of those that `keep`.
fn indices(processes: &[Process], keep: impl Fn(&Process) -> bool) -> Vec<usize> {
    (0..processes.len())
        .filter(|&p| keep(&processes[p]))
        .collect()
}

/// What the faults act on.
pub struct Cluster<'a> {
    pub processes: Vec<Process>,
    pub topology: &'a Topology,
    pub exe: &'a Path,
    /// Every pd member's client address, comma separated.
    pub pd: String,
    pub sql: Vec<String>,
    pub agent: ureq::Agent,
}

impl Cluster<'_> {
    /// Starts `fault`; what it did.
    pub fn start(&mut self, fault: &Fault, rng: &mut StdRng) -> anyhow::Result<String> {
        Ok(match fault {
            Fault::Kill(ps) => {
                for &p in ps {
                    self.processes[p].kill();
                }
                format!("kill {}", self.names(ps))
            }
            Fault::Pause(p) => {
                self.processes[*p].pause(true);
                format!("pause {}", self.processes[*p].name())
            }
            Fault::Isolate(h) => {
                self.topology.isolate(*h, true)?;
                format!("isolate host-{h}")
            }
            Fault::Minority(h) => {
                for other in self.others(*h) {
                    self.topology.cut(*h, other, true)?;
                }
                format!("cut host-{h} off from the other hosts")
            }
            Fault::Bridge(a, b) => {
                self.topology.cut(*a, *b, true)?;
                format!("cut host-{a} and host-{b} apart")
            }
            Fault::Clock(p, offset) => {
                self.restart(*p, *offset)?;
                format!(
                    "restart {} with its clock {offset:+} s",
                    self.processes[*p].name()
                )
            }
            Fault::Shuffle => {
                let body = serde_json::json!({ "name": SHUFFLE_LEADER });
                self.on_pd("POST", "schedulers", Some(body))?;
                "shuffle leaders".to_string()
            }
            Fault::Split(statements) => {
                let mut done = Vec::new();
                for sql in statements {
                    let node = &self.sql[rng.random_range(0..self.sql.len())];
                    let answer = match mysql(node, sql) {
                        Ok(_) => "ok".to_string(),
                        Err((_, e)) => e,
                    };
                    done.push(format!("{sql}: {answer}"));
                }
                format!("split: {}", done.join("; "))
            }
            Fault::KvRestart => {
                let (pds, kvs) = (self.of_role(Role::Pd), self.of_role(Role::Kv));
                for &p in &pds {
                    self.processes[p].pause(true);
                }
                for &p in &kvs {
                    self.processes[p].kill();
                }
                self.start_all(&kvs)?;
                format!("pause {}; restart {}", self.names(&pds), self.names(&kvs))
            }
        })
    }

    /// Heals `fault`; what it did.
    pub fn heal(&mut self, fault: &Fault) -> anyhow::Result<String> {
        Ok(match fault {
            Fault::Kill(ps) => {
                self.start_all(ps)?;
                format!("restart {}", self.names(ps))
            }
            Fault::Pause(p) => {
                self.processes[*p].pause(false);
                format!("resume {}", self.processes[*p].name())
            }
            Fault::Isolate(h) => {
                self.topology.isolate(*h, false)?;
                format!("heal host-{h}")
            }
            Fault::Minority(h) => {
                for other in self.others(*h) {
                    self.topology.cut(*h, other, false)?;
                }
                format!("join host-{h} to the other hosts")
            }
            Fault::Bridge(a, b) => {
                self.topology.cut(*a, *b, false)?;
                format!("join host-{a} and host-{b}")
            }
            Fault::Clock(p, _) => {
                self.restart(*p, 0)?;
                format!("restart {} with a true clock", self.processes[*p].name())
            }
            Fault::Shuffle => {
                self.on_pd("DELETE", &format!("schedulers/{SHUFFLE_LEADER}"), None)?;
                "stop shuffling leaders".to_string()
            }
            Fault::Split(_) => "merges are PD's".to_string(),
            Fault::KvRestart => {
                let pds = self.of_role(Role::Pd);
                for &p in &pds {
                    self.processes[p].pause(false);
                }
                format!("resume {}", self.names(&pds))
            }
        })
    }

    /// Starts every process that is not running: one that exited by itself, or one a heal
    /// could not start again. What it found (each is an anomaly).
    pub fn restart_the_dead(&mut self) -> Vec<String> {
        let mut found = Vec::new();
        for p in self.processes.iter_mut() {
            if p.is_running() {
                continue;
            }
            if p.has_exited() {
                println!("nemesis: {} was not running; restarting it", p.name());
                found.push(format!(
                    "{} exited by itself (its stderr.log says why)",
                    p.name()
                ));
            }
            if let Err(e) = p.start(self.topology, self.exe) {
                found.push(format!("{} could not be started again: {e:#}", p.name()));
            }
        }
        found
    }

    /// Starts each of `processes`, all of them even when one fails.
    fn start_all(&mut self, processes: &[usize]) -> anyhow::Result<()> {
        let mut failed = Vec::new();
        for &p in processes {
            if let Err(e) = self.processes[p].start(self.topology, self.exe) {
                failed.push(format!("{}: {e:#}", self.processes[p].name()));
            }
        }
        anyhow::ensure!(failed.is_empty(), "cannot start {}", failed.join("; "));
        Ok(())
    }

    fn of_role(&self, role: Role) -> Vec<usize> {
        indices(&self.processes, |p| p.role == role)
    }

    fn names(&self, processes: &[usize]) -> String {
        let names: Vec<String> = processes
            .iter()
            .map(|&p| self.processes[p].name())
            .collect();
        names.join(", ")
    }

    fn others(&self, host: usize) -> Vec<usize> {
        let hosts = self.sql.len();
        (0..hosts).filter(|&h| h != host).collect()
    }

    fn restart(&mut self, p: usize, clock_offset_s: i64) -> anyhow::Result<()> {
        let process = &mut self.processes[p];
        process.kill();
        process.clock_offset_s = clock_offset_s;
        process.start(self.topology, self.exe)
    }

    /// A call to the PD leader, retried while PD elects one.
    fn on_pd(
        &self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> anyhow::Result<serde_json::Value> {
        let deadline = Instant::now() + PD_RETRY;
        loop {
            match crate::ctl::call_leader(&self.agent, &self.pd, method, path, body.clone()) {
                Ok(answer) => return Ok(answer),
                Err(e) if Instant::now() > deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(500)),
            }
        }
    }
}
