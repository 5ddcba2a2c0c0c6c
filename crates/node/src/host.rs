//! The host's figures as the kernel counts them, for `GET /debug/host`: CPU time by kind
//! (steal included), the run queue, pressure stall totals, memory, network bytes, and the
//! disk counters of the devices under the node's directories.
//!
//! Every figure is a counter or a level read at one instant; `atoll diag` reads the page
//! twice and divides the difference by the time between, as iostat and vmstat do. The
//! parsers are pure (text in, figures out) so that tests feed them made-up `/proc` files.
//! A file that cannot be read leaves its part out and names it in `missing`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Everything `/debug/host` answers.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct HostFigures {
    /// `/proc/sys/kernel/random/boot_id`: nodes that report the same one share a kernel,
    /// hence the CPUs, memory and disks counted here.
    pub host_id: String,
    pub hostname: String,
    /// CPUs online on the host, whatever this process's quota or affinity.
    pub cpus: usize,
    /// Seconds each CPU kind used since boot, summed over the CPUs (`/proc/stat`).
    pub cpu: Option<CpuTimes>,
    /// Threads runnable now (`procs_running` of `/proc/stat`).
    pub procs_running: Option<u64>,
    /// Microseconds some task stalled, by resource (`/proc/pressure/*`, `some total`).
    pub pressure_stall_us: Option<Pressure>,
    pub memory: Option<Memory>,
    /// Bytes over every interface but loopback, and over loopback on its own: a playground
    /// or a test cluster talks over loopback only.
    pub network: Option<Network>,
    pub disks: Vec<Disk>,
    /// What could not be read, and why.
    pub missing: Vec<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, Default, PartialEq)]
pub struct CpuTimes {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub idle: f64,
    pub iowait: f64,
    pub irq: f64,
    pub softirq: f64,
    pub steal: f64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, Default, PartialEq)]
pub struct Pressure {
    pub cpu: u64,
    pub io: u64,
    pub memory: u64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, Default, PartialEq)]
pub struct Memory {
    pub total_bytes: u64,
    pub available_bytes: u64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, Default, PartialEq)]
pub struct Network {
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub loopback_rx_bytes: u64,
    pub loopback_tx_bytes: u64,
}

/// One block device and the node directories on it, with `/proc/diskstats`' counters.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Disk {
    /// The knobs whose directories live on this device (`data-dir`, `raft-engine.dir`).
    pub dirs: Vec<String>,
    pub device: String,
    pub reads: u64,
    pub read_bytes: u64,
    pub read_ms: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub write_ms: u64,
    /// Milliseconds the device had requests in flight: utilisation is its rate.
    pub io_ms: u64,
    pub flushes: u64,
    pub flush_ms: u64,
}

/// Reads the figures of this host; `dirs` are the node's directories by knob name.
pub fn read(dirs: &[(String, PathBuf)]) -> HostFigures {
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let mut out = HostFigures {
        cpus: usize::try_from(online).unwrap_or(1).max(1),
        ..HostFigures::default()
    };
    let mut file = |path: &str| match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) => {
            out.missing.push(format!("{path}: {e}"));
            None
        }
    };
    let host_id = file("/proc/sys/kernel/random/boot_id");
    let hostname = file("/proc/sys/kernel/hostname");
    let stat = file("/proc/stat");
    let meminfo = file("/proc/meminfo");
    let net = file("/proc/net/dev");
    let diskstats = file("/proc/diskstats");
    let pressure = ["cpu", "io", "memory"].map(|r| file(&format!("/proc/pressure/{r}")));
    out.host_id = host_id.unwrap_or_default().trim().to_string();
    out.hostname = hostname.unwrap_or_default().trim().to_string();
    if let Some(stat) = stat {
        out.cpu = parse_cpu_times(&stat, crate::metrics::ticks_per_second());
        out.procs_running = parse_procs_running(&stat);
    }
    out.memory = meminfo.as_deref().and_then(parse_meminfo);
    out.network = net.as_deref().map(parse_net_dev);
    if let [Some(cpu), Some(io), Some(memory)] = &pressure {
        out.pressure_stall_us = Some(Pressure {
            cpu: parse_pressure_some_total(cpu).unwrap_or(0),
            io: parse_pressure_some_total(io).unwrap_or(0),
            memory: parse_pressure_some_total(memory).unwrap_or(0),
        });
    }
    if let Some(diskstats) = diskstats {
        let devices: Vec<(String, Option<(u32, u32)>)> = dirs
            .iter()
            .map(|(knob, path)| (knob.clone(), device_number(path)))
            .collect();
        out.disks = disks_of(&diskstats, &devices, &mut out.missing);
    }
    out
}

/// The (major, minor) of the device holding `path`, or of its nearest existing parent.
fn device_number(path: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    let dev = path
        .ancestors()
        .find_map(|p| std::fs::metadata(p).ok())?
        .dev();
    Some((libc::major(dev), libc::minor(dev)))
}

/// One `Disk` per device among `devices`, with the knobs on it; a directory on a device
/// `/proc/diskstats` does not list (tmpfs, overlay) is named in `missing`.
fn disks_of(
    diskstats: &str,
    devices: &[(String, Option<(u32, u32)>)],
    missing: &mut Vec<String>,
) -> Vec<Disk> {
    let mut out: Vec<Disk> = Vec::new();
    for (knob, number) in devices {
        let found = number.and_then(|(major, minor)| parse_diskstats_line(diskstats, major, minor));
        let Some(disk) = found else {
            missing.push(format!("{knob}: its device has no /proc/diskstats line"));
            continue;
        };
        match out.iter_mut().find(|d| d.device == disk.device) {
            Some(known) => known.dirs.push(knob.clone()),
            None => out.push(Disk {
                dirs: vec![knob.clone()],
                ..disk
            }),
        }
    }
    out
}

/// The `cpu` line of `/proc/stat`, in seconds (`ticks_per_sec` is `_SC_CLK_TCK`).
pub fn parse_cpu_times(stat: &str, ticks_per_sec: f64) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse::<f64>().map(|t| t / ticks_per_sec))
        .collect::<Result<_, _>>()
        .ok()?;
    let at = |i: usize| v.get(i).copied().unwrap_or(0.0);
    Some(CpuTimes {
        user: at(0),
        nice: at(1),
        system: at(2),
        idle: at(3),
        iowait: at(4),
        irq: at(5),
        softirq: at(6),
        steal: at(7),
    })
}

pub fn parse_procs_running(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("procs_running "))
        .and_then(|v| v.trim().parse().ok())
}

/// `MemTotal` and `MemAvailable` of `/proc/meminfo`.
pub fn parse_meminfo(meminfo: &str) -> Option<Memory> {
    use config::resources::meminfo_bytes;
    Some(Memory {
        total_bytes: meminfo_bytes(meminfo, "MemTotal")?,
        available_bytes: meminfo_bytes(meminfo, "MemAvailable")?,
    })
}

/// Received and sent bytes of `/proc/net/dev`, loopback apart.
pub fn parse_net_dev(net: &str) -> Network {
    let mut out = Network::default();
    for line in net.lines().skip(2) {
        let Some((name, counters)) = line.split_once(':') else {
            continue;
        };
        let v: Vec<u64> = counters
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        let (Some(&rx), Some(&tx)) = (v.first(), v.get(8)) else {
            continue;
        };
        if name.trim() == "lo" {
            out.loopback_rx_bytes += rx;
            out.loopback_tx_bytes += tx;
        } else {
            out.rx_bytes += rx;
            out.tx_bytes += tx;
        }
    }
    out
}

/// The `total=` of the `some` line of a `/proc/pressure/*` file, in microseconds.
pub fn parse_pressure_some_total(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// The `/proc/diskstats` line of device `major:minor` (sectors are 512 bytes whatever the
/// device's block size; flushes are fields 19-20 since Linux 5.5 and 0 before).
pub fn parse_diskstats_line(diskstats: &str, major: u32, minor: u32) -> Option<Disk> {
    diskstats.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first()?.parse::<u32>().ok()? != major || f.get(1)?.parse::<u32>().ok()? != minor {
            return None;
        }
        let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        Some(Disk {
            dirs: Vec::new(),
            device: f.get(2)?.to_string(),
            reads: n(3),
            read_bytes: n(5) * 512,
            read_ms: n(6),
            writes: n(7),
            write_bytes: n(9) * 512,
            write_ms: n(10),
            io_ms: n(12),
            flushes: n(18),
            flush_ms: n(19),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  1000 20 300 5000 40 0 60 70 0 0\ncpu0 500 10 150 2500 20 0 30 35 0 0\nintr 1\nprocs_running 3\nprocs_blocked 0\n";

    #[test]
    fn cpu_times_are_seconds_of_the_summed_line() {
        let t = parse_cpu_times(STAT, 100.0).unwrap();
        assert_eq!(t.user, 10.0);
        assert_eq!(t.system, 3.0);
        assert_eq!(t.idle, 50.0);
        assert_eq!(t.steal, 0.7);
        assert_eq!(parse_procs_running(STAT), Some(3));
    }

    #[test]
    fn meminfo_needs_total_and_available() {
        let m = parse_meminfo("MemTotal:       2048 kB\nMemFree: 1 kB\nMemAvailable:    1024 kB\n");
        assert_eq!(
            m,
            Some(Memory {
                total_bytes: 2048 * 1024,
                available_bytes: 1024 * 1024
            })
        );
        assert_eq!(parse_meminfo("MemTotal: 2048 kB\n"), None);
    }

    #[test]
    fn network_keeps_loopback_apart() {
        let net = "Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes\n    lo: 100 1 0 0 0 0 0 0 200 2 0 0 0 0 0 0\n  eth0: 1000 1 0 0 0 0 0 0 3000 2 0 0 0 0 0 0\n  eth1: 1 1 0 0 0 0 0 0 4 2 0 0 0 0 0 0\n";
        assert_eq!(
            parse_net_dev(net),
            Network {
                rx_bytes: 1001,
                tx_bytes: 3004,
                loopback_rx_bytes: 100,
                loopback_tx_bytes: 200
            }
        );
    }

    #[test]
    fn pressure_reads_the_some_total() {
        let text = "some avg10=1.16 avg60=1.77 avg300=7.81 total=1993713312\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=5\n";
        assert_eq!(parse_pressure_some_total(text), Some(1993713312));
    }

    #[test]
    fn disks_group_the_knobs_on_one_device_and_name_the_unlisted() {
        let diskstats = " 254 0 vda 10 0 8 6 20 0 16 12 0 30 40 0 0 0 0 5 7\n   7 0 loop0 1 0 2 3 4 0 6 7 0 9 10\n";
        let disk = parse_diskstats_line(diskstats, 254, 0).unwrap();
        assert_eq!(disk.device, "vda");
        assert_eq!(
            (disk.reads, disk.read_bytes, disk.read_ms),
            (10, 8 * 512, 6)
        );
        assert_eq!(
            (disk.writes, disk.write_bytes, disk.write_ms),
            (20, 16 * 512, 12)
        );
        assert_eq!((disk.io_ms, disk.flushes, disk.flush_ms), (30, 5, 7));
        // Before Linux 5.5 the line ends before the flush fields.
        assert_eq!(parse_diskstats_line(diskstats, 7, 0).unwrap().flushes, 0);

        let mut missing = Vec::new();
        let devices = [
            ("data-dir".to_string(), Some((254, 0))),
            ("raft-engine.dir".to_string(), Some((254, 0))),
            ("tmp".to_string(), Some((0, 40))),
        ];
        let disks = disks_of(diskstats, &devices, &mut missing);
        assert_eq!(disks.len(), 1);
        assert_eq!(disks[0].dirs, ["data-dir", "raft-engine.dir"]);
        assert_eq!(missing.len(), 1);
        assert!(missing[0].starts_with("tmp: "), "{missing:?}");
    }

    #[test]
    fn this_host_reads_without_missing_parts_for_an_existing_dir() {
        let figures = read(&[("data-dir".to_string(), std::env::temp_dir())]);
        assert!(figures.cpu.is_some());
        assert!(figures.cpus >= 1);
        assert!(!figures.host_id.is_empty());
    }
}
