//! Three simulated hosts: a network namespace each, joined by a bridge in the harness's own
//! namespace, on a private /24 the run owns (`10.77.X.0/24`, X from the harness's pid, so
//! concurrent runs rarely meet). Host i is `10.77.X.(11+i)`; the bridge is `10.77.X.1`, so
//! clients here reach every host. Names carry the harness's pid in hex (`atlN<pid>-h<i>`,
//! bridge `atlN<pid>`): [`Topology::remove_stale`] removes what a run that died left.
//!
//! A host is cut off by taking its interface down ([`Topology::isolate`]); two hosts lose
//! each other by a blackhole route to the other in each namespace ([`Topology::cut`]), which
//! leaves both reachable from the clients. Nothing else of the machine is touched.

use std::process::Command;

use anyhow::{Context, bail};

pub struct Topology {
    tag: String,
    subnet: u8,
    hosts: usize,
}

/// Runs `ip` with `args`; fails with what it printed.
fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("cannot run ip (iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

impl Topology {
    /// Creates `hosts` namespaces on a new bridge.
    pub fn create(hosts: usize) -> anyhow::Result<Topology> {
        let pid = std::process::id();
        let topology = Topology {
            tag: format!("{pid:x}"),
            subnet: 10 + (pid % 240) as u8,
            hosts,
        };
        let bridge = topology.bridge();
        let net = topology.subnet;
        ip(&["link", "add", &bridge, "type", "bridge"])
            .context("creating network namespaces needs root (CAP_NET_ADMIN)")?;
        ip(&["addr", "add", &format!("10.77.{net}.1/24"), "dev", &bridge])?;
        ip(&["link", "set", &bridge, "up"])?;
        for i in 0..hosts {
            let (ns, veth) = (topology.namespace(i), format!("{bridge}v{i}"));
            ip(&["netns", "add", &ns])?;
            ip(&[
                "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
            ])?;
            ip(&["link", "set", &veth, "master", &bridge, "up"])?;
            let addr = format!("{}/24", topology.ip(i));
            ip(&["-n", &ns, "addr", "add", &addr, "dev", "eth0"])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(topology)
    }

    fn bridge(&self) -> String {
        format!("atlN{}", self.tag)
    }

    pub fn namespace(&self, host: usize) -> String {
        format!("atlN{}-h{host}", self.tag)
    }

    pub fn ip(&self, host: usize) -> String {
        format!("10.77.{}.{}", self.subnet, 11 + host)
    }

    /// `program args...` to run inside `host`'s namespace.
    pub fn command(&self, host: usize, program: &std::path::Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.namespace(host)])
            .arg(program);
        c
    }

    /// Cuts `host` off from every other (and from the clients), or heals it.
    pub fn isolate(&self, host: usize, cut: bool) -> anyhow::Result<()> {
        let state = if cut { "down" } else { "up" };
        ip(&["-n", &self.namespace(host), "link", "set", "eth0", state])
    }

    /// Drops every packet between hosts `a` and `b` (both ways), or heals the pair.
    pub fn cut(&self, a: usize, b: usize, cut: bool) -> anyhow::Result<()> {
        let verb = if cut { "add" } else { "del" };
        for (from, to) in [(a, b), (b, a)] {
            let to = format!("{}/32", self.ip(to));
            ip(&["-n", &self.namespace(from), "route", verb, "blackhole", &to])?;
        }
        Ok(())
    }

    /// Removes namespaces and bridges of earlier runs whose harness is gone.
    pub fn remove_stale() {
        let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
            return;
        };
        let mine = format!("atlN{:x}-", std::process::id());
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let ns = line.split_whitespace().next().unwrap_or("");
            if ns.starts_with("atlN") && !ns.starts_with(&mine) {
                let tag = ns
                    .trim_start_matches("atlN")
                    .split('-')
                    .next()
                    .unwrap_or("");
                let alive = u32::from_str_radix(tag, 16)
                    .is_ok_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists());
                if !alive {
                    let _ = ip(&["netns", "del", ns]);
                    let _ = ip(&["link", "del", &format!("atlN{tag}")]);
                }
            }
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for i in 0..self.hosts {
            let _ = ip(&["netns", "del", &self.namespace(i)]);
        }
        let _ = ip(&["link", "del", &self.bridge()]);
    }
}
