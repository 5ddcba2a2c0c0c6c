//! What the process may really use: CPU cores and memory, after cgroups and affinity.
//!
//! Every CPU- or memory-derived default starts here. The host's totals are only the upper
//! bound; a cgroup CPU quota (v1 `cpu.cfs_quota_us / cpu.cfs_period_us`, v2 `cpu.max`), a
//! cgroup memory limit (v1 `memory.limit_in_bytes`, v2 `memory.max`) and the CPU affinity
//! mask each lower it. Limits are read at every level from the process's own cgroup up to
//! the mount point, and the smallest wins, as the kernel enforces them.
//!
//! The parsing is pure ([`Resources::from_sources`]) so that tests can hand it made-up
//! `/proc/self/cgroup`, `/proc/self/mountinfo` and cgroup trees under a temporary root.

use std::path::{Path, PathBuf};

/// The CPU and memory this process may use. `cpu_cores` may be fractional (a 1.5-core quota).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resources {
    pub cpu_cores: f64,
    pub memory_bytes: u64,
}

/// Raw inputs for [`Resources::from_sources`]: the files as text plus the host's figures.
pub struct Sources<'a> {
    /// Contents of `/proc/self/cgroup`.
    pub proc_cgroup: &'a str,
    /// Contents of `/proc/self/mountinfo`.
    pub mountinfo: &'a str,
    /// Prefix for every mount point (`/` on a real system, a temp dir in tests).
    pub fs_root: &'a Path,
    /// CPUs in the affinity mask (or online CPUs when the mask cannot be read).
    pub affinity_cpus: usize,
    /// `MemTotal` of the host.
    pub host_memory_bytes: u64,
}

impl Resources {
    /// Reads the real limits of the running process.
    pub fn detect() -> Resources {
        let proc_cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        Resources::from_sources(&Sources {
            proc_cgroup: &proc_cgroup,
            mountinfo: &mountinfo,
            fs_root: Path::new("/"),
            affinity_cpus: affinity_cpus(),
            host_memory_bytes: host_memory_bytes(),
        })
    }

    pub fn from_sources(src: &Sources<'_>) -> Resources {
        let mut cpu_cores = src.affinity_cpus.max(1) as f64;
        if let Some(quota) = cgroup_cpu_quota(src) {
            cpu_cores = cpu_cores.min(quota);
        }
        let mut memory_bytes = src.host_memory_bytes;
        if let Some(limit) = cgroup_memory_limit(src) {
            memory_bytes = memory_bytes.min(limit);
        }
        Resources {
            cpu_cores,
            memory_bytes,
        }
    }

    /// Lowers the figures to a share handed down by a launcher (the playground), never raises them.
    pub fn limited_to(self, cpu_cores: Option<f64>, memory_bytes: Option<u64>) -> Resources {
        Resources {
            cpu_cores: cpu_cores.map_or(self.cpu_cores, |c| c.min(self.cpu_cores)),
            memory_bytes: memory_bytes.map_or(self.memory_bytes, |m| m.min(self.memory_bytes)),
        }
    }
}

fn affinity_cpus() -> usize {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it for the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let n = libc::CPU_COUNT(&set);
            if n > 0 {
                return n as usize;
            }
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn host_memory_bytes() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    meminfo_bytes(&meminfo, "MemTotal").unwrap_or(u64::MAX)
}

/// The bytes of `field` (`MemTotal`, `MemAvailable`, ...) in `/proc/meminfo`'s text.
pub fn meminfo_bytes(meminfo: &str, field: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        let kib = rest
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<u64>()
            .ok()?;
        Some(kib * 1024)
    })
}

/// One mount of a cgroup hierarchy: its root inside the hierarchy and where it is mounted.
struct CgroupMount {
    root: String,
    mount_point: String,
}

/// Finds the mount of the v1 hierarchy holding `controller`, or of the v2 hierarchy when `None`.
fn find_mount(mountinfo: &str, controller: Option<&str>) -> Option<CgroupMount> {
    mountinfo.lines().find_map(|line| {
        // Fields: id parent major:minor root mount-point options [optional...] - fstype source super-options
        let (left, right) = line.split_once(" - ")?;
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        let fstype = *right.first()?;
        let matches = match controller {
            None => fstype == "cgroup2",
            Some(c) => fstype == "cgroup" && right.get(2)?.split(',').any(|o| o == c),
        };
        if !matches {
            return None;
        }
        Some(CgroupMount {
            root: left.get(3)?.to_string(),
            mount_point: left.get(4)?.to_string(),
        })
    })
}

/// The cgroup path of this process for `controller` (v1) or the unified hierarchy (v2, `None`).
fn cgroup_path<'a>(proc_cgroup: &'a str, controller: Option<&str>) -> Option<&'a str> {
    proc_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = match controller {
            None => id == "0" && controllers.is_empty(),
            Some(c) => controllers.split(',').any(|x| x == c),
        };
        matches.then_some(path)
    })
}

/// Directories from the process's own cgroup up to the hierarchy's mount point.
fn cgroup_dirs(src: &Sources<'_>, controller: Option<&str>) -> Vec<PathBuf> {
    let (Some(path), Some(mount)) = (
        cgroup_path(src.proc_cgroup, controller),
        find_mount(src.mountinfo, controller),
    ) else {
        return Vec::new();
    };
    let relative = path.strip_prefix(mount.root.as_str()).unwrap_or(path);
    let top = src.fs_root.join(mount.mount_point.trim_start_matches('/'));
    let mut dir = top.join(relative.trim_start_matches('/'));
    let mut dirs = vec![dir.clone()];
    while dir != top {
        if !dir.pop() {
            break;
        }
        dirs.push(dir.clone());
    }
    dirs
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// `quota / period` when both are positive: a limit of that many cores.
fn cores(quota: f64, period: f64) -> Option<f64> {
    (quota > 0.0 && period > 0.0).then_some(quota / period)
}

fn cgroup_cpu_quota(src: &Sources<'_>) -> Option<f64> {
    let number = |path: PathBuf| read_trimmed(&path)?.parse::<f64>().ok();
    let v1 = cgroup_dirs(src, Some("cpu")).into_iter().filter_map(|dir| {
        // v1 writes -1 for "no quota", which `cores` rejects.
        cores(
            number(dir.join("cpu.cfs_quota_us"))?,
            number(dir.join("cpu.cfs_period_us"))?,
        )
    });
    let v2 = cgroup_dirs(src, None).into_iter().filter_map(|dir| {
        // v2 writes "max 100000" for "no quota"; "max" does not parse as a number.
        let line = read_trimmed(&dir.join("cpu.max"))?;
        let (quota, period) = line.split_once(' ')?;
        cores(quota.parse().ok()?, period.trim().parse().ok()?)
    });
    v1.chain(v2).reduce(f64::min)
}

fn cgroup_memory_limit(src: &Sources<'_>) -> Option<u64> {
    // v1 reports "no limit" as a huge page-aligned number; anything past 2^62 means none.
    const NO_LIMIT_ABOVE: u64 = 1 << 62;
    let v1 = cgroup_dirs(src, Some("memory"))
        .into_iter()
        .map(|d| d.join("memory.limit_in_bytes"));
    let v2 = cgroup_dirs(src, None)
        .into_iter()
        .map(|d| d.join("memory.max"));
    v1.chain(v2)
        .filter_map(|file| read_trimmed(&file)?.parse::<u64>().ok())
        .filter(|&limit| limit < NO_LIMIT_ABOVE)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    const MOUNTINFO_V1: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
34 31 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:33 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn v1_quota_and_memory_limit_lower_the_host_figures() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        write(
            r,
            "sys/fs/cgroup/cpu,cpuacct/db/node1/cpu.cfs_quota_us",
            "150000\n",
        );
        write(
            r,
            "sys/fs/cgroup/cpu,cpuacct/db/node1/cpu.cfs_period_us",
            "100000\n",
        );
        // A parent with a looser quota does not raise the child's.
        write(
            r,
            "sys/fs/cgroup/cpu,cpuacct/db/cpu.cfs_quota_us",
            "400000\n",
        );
        write(
            r,
            "sys/fs/cgroup/cpu,cpuacct/db/cpu.cfs_period_us",
            "100000\n",
        );
        write(
            r,
            "sys/fs/cgroup/memory/db/node1/memory.limit_in_bytes",
            "9223372036854771712\n",
        );
        write(
            r,
            "sys/fs/cgroup/memory/db/memory.limit_in_bytes",
            "2147483648\n",
        );
        let res = Resources::from_sources(&Sources {
            proc_cgroup: "4:memory:/db/node1\n2:cpu,cpuacct:/db/node1\n0::/\n",
            mountinfo: MOUNTINFO_V1,
            fs_root: r,
            affinity_cpus: 16,
            host_memory_bytes: 64 << 30,
        });
        assert_eq!(res.cpu_cores, 1.5);
        assert_eq!(res.memory_bytes, 2 << 30);
    }

    #[test]
    fn v2_cpu_max_and_memory_max() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        write(r, "sys/fs/cgroup/app/cpu.max", "100000 100000\n");
        write(r, "sys/fs/cgroup/app/memory.max", "1073741824\n");
        write(r, "sys/fs/cgroup/cpu.max", "max 100000\n");
        let res = Resources::from_sources(&Sources {
            proc_cgroup: "0::/app\n",
            mountinfo: "25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            fs_root: r,
            affinity_cpus: 8,
            host_memory_bytes: 64 << 30,
        });
        assert_eq!(res.cpu_cores, 1.0);
        assert_eq!(res.memory_bytes, 1 << 30);
    }

    #[test]
    fn a_namespaced_cgroup_path_is_taken_relative_to_the_mount_root() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        // Inside a container the mount's root is the container's own cgroup.
        write(r, "sys/fs/cgroup/cpu.max", "50000 100000\n");
        let res = Resources::from_sources(&Sources {
            proc_cgroup: "0::/kubepods/pod1\n",
            mountinfo: "25 1 0:22 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            fs_root: r,
            affinity_cpus: 4,
            host_memory_bytes: 8 << 30,
        });
        assert_eq!(res.cpu_cores, 0.5);
        assert_eq!(res.memory_bytes, 8 << 30);
    }

    #[test]
    fn affinity_caps_when_no_quota_is_set() {
        let root = tempfile::tempdir().unwrap();
        let res = Resources::from_sources(&Sources {
            proc_cgroup: "1:cpu:/\n",
            mountinfo: MOUNTINFO_V1,
            fs_root: root.path(),
            affinity_cpus: 3,
            host_memory_bytes: 4 << 30,
        });
        assert_eq!(res.cpu_cores, 3.0);
        assert_eq!(res.memory_bytes, 4 << 30);
    }

    #[test]
    fn a_launcher_share_only_lowers() {
        let res = Resources {
            cpu_cores: 2.0,
            memory_bytes: 1 << 30,
        };
        let shared = res.limited_to(Some(0.5), Some(4 << 30));
        assert_eq!(shared.cpu_cores, 0.5);
        assert_eq!(shared.memory_bytes, 1 << 30);
    }

    #[test]
    fn detect_on_this_machine_is_sane() {
        let res = Resources::detect();
        assert!(res.cpu_cores > 0.0);
        assert!(res.memory_bytes > 0);
    }
}
