//! The three-node hybrid layout on the simulated hosts: each host runs a pd member, a kv
//! node (regions replicated through Raft) and a sql node of this binary, in its namespace,
//! with TiDB's default ports on the host's address. A process can be killed, paused,
//! resumed and restarted (with the same arguments and data dir), and restarted with its wall
//! clock off by some seconds (libfaketime, preloaded; its monotonic clock stays true).
//!
//! PD merges regions 10 s after their split (`schedule.split-merge-interval`), so that the
//! split nemesis's regions merge back while the workloads run.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use anyhow::Context;

use super::topology::Topology;

/// Debian's libfaketime (package faketime).
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Pd,
    Kv,
    Sql,
}

pub struct Process {
    pub host: usize,
    pub role: Role,
    args: Vec<String>,
    data_dir: PathBuf,
    child: Option<Child>,
    pub paused: bool,
    /// Seconds the wall clock is off by from the next start on (0: true).
    pub clock_offset_s: i64,
}

impl Process {
    pub fn name(&self) -> String {
        let role = match self.role {
            Role::Pd => "pd",
            Role::Kv => "kv",
            Role::Sql => "sql",
        };
        format!("{role}-{}", self.host)
    }

    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Whether it was started and has ended by itself (the harness's kill forgets the child).
    pub fn has_exited(&mut self) -> bool {
        self.child.is_some() && !self.is_running()
    }

    pub fn start(&mut self, topology: &Topology, exe: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.data_dir)?;
        // Appended to, so that a crash's last words survive the restart.
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.data_dir.join("stderr.log"))?;
        std::io::Write::write_all(&mut log, b"--- atoll nemesis starts this process\n")?;
        let mut command = topology.command(self.host, exe);
        command
            .args(&self.args)
            .arg(format!("--data-dir={}", self.data_dir.display()))
            .env("ATOLL_CPU_CORES", "0.5")
            .env("ATOLL_MEMORY_LIMIT", (1u64 << 30).to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        if self.clock_offset_s != 0 {
            anyhow::ensure!(
                Path::new(LIBFAKETIME).exists(),
                "the clock nemesis needs {LIBFAKETIME} (apt-get install faketime)"
            );
            command
                .env("LD_PRELOAD", LIBFAKETIME)
                .env("FAKETIME", format!("{:+}s", self.clock_offset_s))
                .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        }
        // The kernel ends the process if the harness dies. In a process group of its own, it
        // does not get the terminal's Ctrl-C: the harness ends the run and then the processes.
        crate::playground::signal_when_parent_dies(&mut command, libc::SIGKILL);
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        self.child = Some(
            command
                .spawn()
                .with_context(|| format!("cannot start {}", self.name()))?,
        );
        self.paused = false;
        Ok(())
    }

    fn signal(&self, signal: i32) {
        // `ip netns exec` execs the program: the child's pid is the process's.
        if let Some(c) = &self.child {
            crate::playground::signal_child(c, signal);
        }
    }

    pub fn kill(&mut self) {
        self.signal(libc::SIGKILL);
        if let Some(mut c) = self.child.take() {
            let _ = c.wait();
        }
        self.paused = false;
    }

    pub fn pause(&mut self, pause: bool) {
        self.signal(if pause { libc::SIGSTOP } else { libc::SIGCONT });
        self.paused = pause;
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Every process of the three hosts, not started yet.
pub fn plan(topology: &Topology, hosts: usize, out: &Path) -> anyhow::Result<Vec<Process>> {
    let config = out.join("kv.toml");
    std::fs::write(&config, "[raftstore]\nreplication = true\n")?;
    let pd_config = out.join("pd.toml");
    std::fs::write(&pd_config, "[schedule]\nsplit-merge-interval = \"10s\"\n")?;
    let ip = |h: usize| topology.ip(h);
    let initial = (0..hosts)
        .map(|h| format!("pd-{h}=http://{}:2380", ip(h)))
        .collect::<Vec<_>>()
        .join(",");
    let pds = (0..hosts)
        .map(|h| format!("{}:2379", ip(h)))
        .collect::<Vec<_>>()
        .join(",");
    let mut all = Vec::new();
    for h in 0..hosts {
        let dir = |role: &str| out.join(format!("host-{h}")).join(role);
        let process = |role, args: Vec<String>, data_dir| Process {
            host: h,
            role,
            args,
            data_dir,
            child: None,
            paused: false,
            clock_offset_s: 0,
        };
        all.push(process(
            Role::Pd,
            vec![
                "pd".into(),
                format!("--name=pd-{h}"),
                format!("--client-urls=http://{}:2379", ip(h)),
                format!("--peer-urls=http://{}:2380", ip(h)),
                format!("--initial-cluster={initial}"),
                format!("--config={}", pd_config.display()),
            ],
            dir("pd"),
        ));
        all.push(process(
            Role::Kv,
            vec![
                "kv".into(),
                format!("--addr={}:20160", ip(h)),
                format!("--status-addr={}:20180", ip(h)),
                format!("--pd={pds}"),
                format!("--config={}", config.display()),
            ],
            dir("kv"),
        ));
        all.push(process(
            Role::Sql,
            vec![
                "sql".into(),
                format!("--host={}", ip(h)),
                "-P4000".into(),
                "--status=10080".into(),
                format!("--path={pds}"),
            ],
            dir("sql"),
        ));
    }
    Ok(all)
}
